"""`github-sandbox serve|seed|deliver`: serve the local GitHub stand-in, build a seed repository, deliver an event."""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

import click

from .seed import SeedError, load_seed
from .tools import deliver_cmd, seed_cmd

# Every command takes -h as well as --help (each says so itself: click keeps the help option of the
# first context a command ran in).
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}


@click.group(name="github-sandbox", context_settings=HELP_OPTIONS)
def main() -> None:
    """A local stand-in for GitHub's REST and GraphQL API, for tests, demos and trying a bot by hand.

    serve: run it on a seed file; seed: build a seed repository (main and a feature branch) and its
    seed file; deliver: ask a running sandbox for a webhook event (to a file, or signed to its receiver).
    Documentation: docs/sandbox.md.
    """


@main.command(name="serve", context_settings=HELP_OPTIONS)
@click.option("--seed", "seed_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Seed YAML: repository, users, teams, pulls, comments (docs/sandbox.md).")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="TCP port; 0 picks a free one.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--log-out", type=click.Path(dir_okay=False, path_type=Path),
              help="On exit, write every request the sandbox saw (the /_sandbox/log?all=1 list) to this JSON file.")
@click.option("--api", "api", default="api.github.com", show_default=True,
              help="Which GitHub description to serve: api.github.com, ghec, or a GitHub Enterprise Server "
                   "version the pinned @octokit/openapi ships (e.g. ghes-3.19). / 提供哪个 GitHub API 描述：api.github.com、"
                   "ghec，或所锁定的 @octokit/openapi 附带的 GitHub Enterprise Server 版本（如 ghes-3.19）。")
@click.option("--deliver", "deliver_url", default=None, metavar="URL",
              help="Send each new comment as a signed issue_comment webhook to URL, e.g. a running "
                   "`recipe-bot serve` (docs/sandbox.md).")
@click.option("--secret-env", default="RECIPE_BOT_WEBHOOK_SECRET", show_default=True,
              help="With --deliver: the variable holding the webhook secret (the same one serve reads).")
def serve_cmd(seed_path: Path, port: int, host: str, log_out: Path | None, api: str,
                deliver_url: str | None, secret_env: str) -> None:
    """Serve a local stand-in for GitHub's REST API, backed by a git repository and a seed file.

    The first line printed is `listening on http://HOST:PORT`. Each request's token names the acting
    user (`Authorization: token alice`). Every request and response is checked against GitHub's
    OpenAPI description (from the pinned @octokit/openapi package; GET /_sandbox/health names its version);
    GET /_sandbox/log shows the writes, GET /_sandbox/state the state.
    """
    from .openapi import UnknownAPI
    from .server import Sandbox, SandboxHTTPServer
    from .upstream import UpstreamMissing

    secret = os.environ.get(secret_env, "")
    if deliver_url is not None:
        if not deliver_url.startswith(("http://", "https://")):
            raise click.ClickException(f"--deliver {deliver_url}: expected an http:// or https:// URL, "
                                       "e.g. http://127.0.0.1:8080/\n"
                                       f"--deliver {deliver_url}：应为 http:// 或 https:// 开头的 URL，"
                                       "例如 http://127.0.0.1:8080/")
        if not secret:
            raise click.ClickException(f"--deliver needs the webhook secret in {secret_env} (export it for both "
                                       f"the sandbox and serve)\n--deliver 需要环境变量 {secret_env} 中的 webhook "
                                       "密钥（请为 sandbox 和 serve 设置同一个值）")
    try:
        app = Sandbox(load_seed(seed_path), api=api)
    except (SeedError, UnknownAPI, UpstreamMissing) as exc:
        raise click.ClickException(str(exc)) from None
    try:
        httpd = SandboxHTTPServer(app, host, port)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror}\n"
                                   f"无法监听 {host}:{port}：{exc.strerror}") from None
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    serving = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    serving.start()
    click.echo(f"listening on {httpd.url}")
    if deliver_url is not None:
        app.deliverer.target(deliver_url, secret)
        click.echo(f"delivering webhooks to {deliver_url}")
    sys.stdout.flush()
    while not stop.wait(0.5):
        pass
    httpd.shutdown()
    httpd.server_close()
    entries = app.log(everything=True)
    if log_out is not None:
        log_out.write_text(json.dumps(entries, indent=1, ensure_ascii=False), encoding="utf-8")
    bad = [e for e in entries if not e["response_valid"]]
    click.echo(f"sandbox stopped: {len(entries)} requests, {len(bad)} invalid responses")


main.add_command(seed_cmd)
main.add_command(deliver_cmd)


def run(argv: list[str] | None = None) -> None:
    """The console script: an error without a Chinese line (click's own usage errors, the seed file's) gets one."""
    try:
        main.main(args=argv, prog_name="github-sandbox", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted. / 已中止。", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        if not any("\u4e00" <= ch <= "\u9fff" for ch in exc.format_message()):
            usage = isinstance(exc, click.UsageError)
            click.echo("错误：命令行参数有误，详见上一行英文说明；`github-sandbox 子命令 -h` 列出可用的选项。" if usage
                       else "错误：详见上一行英文说明（sandbox 的这条消息尚无中文版本）。", err=True)
        sys.exit(exc.exit_code)
