"""`recipe-bot serve`: the webhook server of a GitHub App, configured from flags and environment variables."""
from __future__ import annotations

import functools
import logging
import os
import signal
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click
import waitress
from pydantic import SecretStr

from bot.control.handle import handle_event
from bot.core.cli_guard import HELP_OPTIONS
from bot.core.github_retry import RetryPolicy
from bot.core.settings import SettingsError, setting_named, variable
from bot.serve.auth import Credentials
from bot.serve.logs import JsonLog
from bot.serve.queue import DeliveryQueue
from bot.serve.service import Service
from bot.serve.workers import Handler, WorkerProcess
from bot.core.messages import Message, Refusal, msg

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication


HTTP_THREADS = 8  # threads that read requests and answer them; handling is the worker process's job


def _access_log(app: WSGIApplication, log: JsonLog) -> WSGIApplication:
    """One JSON line per request (client, method, path, status): waitress itself logs no access lines."""

    def logged(environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        def start(status: str, headers: list, exc_info: object = None) -> object:
            log("http", client=environ.get("REMOTE_ADDR", "-"), method=environ.get("REQUEST_METHOD", ""),
                path=environ.get("PATH_INFO", ""), status=status.split(" ", 1)[0])
            return start_response(status, headers, exc_info)

        return app(environ, start)

    return logged


class _JsonLogHandler(logging.Handler):
    """waitress's own warnings and errors as JSON lines too, so every line on stderr parses."""

    def __init__(self, log: JsonLog) -> None:
        super().__init__(logging.INFO)
        self._log = log

    def emit(self, record: logging.LogRecord) -> None:
        self._log("http", level=record.levelname.lower(), line=record.getMessage())


def _log_waitress_as_json(log: JsonLog) -> None:
    logger = logging.getLogger("waitress")
    logger.handlers[:] = [_JsonLogHandler(log)]
    logger.setLevel(logging.WARNING)  # its INFO line ("Serving on ...") repeats our `listening`
    logger.propagate = False


def _fail(message: Message) -> click.ClickException:
    return Refusal(message)


def handler_for(credentials: Credentials) -> Handler:
    """`recipe-bot handle`'s handler with a client per delivery; called where the deliveries are handled."""
    factory = credentials.client_factory()

    def handler(event: str, payload: dict) -> object:
        return handle_event(event, payload, factory(payload))

    return handler


def build_service(*, queue: str, secret_env: str, token_env: str | None, app_id_env: str, key_env: str,
                  workers: int, environ: dict[str, str] | None = None, log: JsonLog | None = None,
                  in_process: bool = False) -> Service:
    """Everything `serve` needs, read through the settings model at this edge and checked up front; bad config
    raises one bilingual ClickException. Deliveries are handled in a worker process (`in_process`: by threads
    of this one, whose `service.workers.handler` a caller may wrap)."""
    env = os.environ if environ is None else environ
    log = log or JsonLog()
    try:
        # the model's fields, read from the variables the options name (their defaults: the fields' own)
        secret: SecretStr | None = setting_named("WEBHOOK_SECRET", secret_env, env)
        app_id: str | None = None if token_env else setting_named("APP_ID", app_id_env, env)
        key_path: Path | None = None if token_env else setting_named("APP_PRIVATE_KEY_PATH", key_env, env)
        policy = RetryPolicy.from_env(env)  # RECIPE_BOT_GITHUB_*: read once, for every delivery's client
    except SettingsError as exc:
        raise Refusal(exc.message) from None
    if secret is None:
        raise _fail(msg("the webhook secret is not set: export %(variable)s (the GitHub App's webhook secret), "
                        "or name another variable with --secret-env", variable=secret_env))
    base_url = env.get("GITHUB_API_URL") or "https://api.github.com"
    if token_env:
        token = env.get(token_env, "")
        if not token:
            raise _fail(msg("--token-env %(variable)s: the variable is not set or empty", variable=token_env))
        credentials = Credentials(base_url, token=SecretStr(token), policy=policy)
    else:
        if app_id is None or key_path is None:
            raise _fail(msg("GitHub App auth needs %(app_id)s (the App's numeric id) and %(key)s (the path of "
                            "its private key .pem); for a plain token (the sandbox) pass --token-env NAME",
                            app_id=app_id_env, key=key_env))
        try:
            private_key = key_path.read_text(encoding="utf-8")
        except OSError as exc:
            raise _fail(msg("%(variable)s=%(path)s: cannot read the private key: %(why)s", variable=key_env,
                            path=key_path, why=exc.strerror)) from None
        if "PRIVATE KEY" not in private_key:
            raise _fail(msg("%(path)s: not a PEM private key (expected a -----BEGIN ... PRIVATE KEY----- block)",
                            path=key_path))
        credentials = Credentials(base_url, app_id=app_id, private_key=SecretStr(private_key), policy=policy)
    try:
        # this connection syncs each delivery before its 2xx; only the one that claims recovers rows
        store = DeliveryQueue(queue, role="both" if in_process else "answer")
    except Exception as exc:  # noqa: BLE001 (sqlite3.Error, OSError: both mean a bad --queue)
        raise _fail(msg("--queue %(queue)s: cannot open the SQLite queue: %(why)s", queue=queue, why=str(exc))) from None
    if in_process:
        return Service.in_process(store, secret, handler_for(credentials), workers=workers, log=log)
    pool = WorkerProcess(queue, functools.partial(handler_for, credentials), workers, log)
    return Service(store, secret, pool, log=log)


@click.command("serve", context_settings=HELP_OPTIONS)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0 in a container).")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free port; the log line `listening` names it).")
@click.option("--queue", "queue", default="recipe-bot-queue.sqlite3", show_default=True,
              type=click.Path(dir_okay=False), help="SQLite file of the durable delivery queue (WAL mode).")
@click.option("--secret-env", default=variable("WEBHOOK_SECRET"), show_default=True,
              help="Environment variable holding the App's webhook secret.")
@click.option("--token-env", default=None,
              help="Act with the plain token in this variable instead of App installation tokens (the sandbox).")
@click.option("--app-id-env", default=variable("APP_ID"), show_default=True,
              help="Environment variable holding the GitHub App's id.")
@click.option("--private-key-env", "key_env", default=variable("APP_PRIVATE_KEY_PATH"), show_default=True,
              help="Environment variable holding the path of the App's private key (.pem).")
@click.option("--workers", default=4, show_default=True, type=click.IntRange(1, 64),
              help="Deliveries handled at once (one at a time per PR).")
def serve_cmd(host: str, port: int, queue: str, secret_env: str, token_env: str | None, app_id_env: str,
              key_env: str, workers: int) -> None:
    """Serve GitHub App webhooks: verify, queue durably, handle each like `recipe-bot handle` (in a worker process).

    Endpoints: POST / (webhooks), GET /healthz, /readyz, /metrics. Reads GITHUB_API_URL.
    """

    log = JsonLog()
    service = build_service(queue=queue, secret_env=secret_env, token_env=token_env, app_id_env=app_id_env,
                            key_env=key_env, workers=workers, log=log)
    _log_waitress_as_json(log)
    try:
        # waitress: a production WSGI server (threads answer requests; the queue's own workers handle them)
        server = waitress.create_server(_access_log(service, log), host=host, port=port, threads=HTTP_THREADS,
                                        ident="recipe-bot", clear_untrusted_proxy_headers=True)
    except OSError as exc:
        raise _fail(msg("--host %(host)s --port %(port)s: cannot listen: %(why)s", host=host, port=port,
                        why=exc.strerror)) from None
    service.start()

    def stop(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    bound = getattr(server, "effective_port", port)  # one address; a name of several keeps --port
    log("listening", host=host, port=bound, url=f"http://{host}:{bound}/")
    try:
        server.run()  # returns on KeyboardInterrupt (Ctrl-C or SIGTERM), after stopping its request threads
    finally:
        server.close()
        service.stop()
        log("stopped", **service.queue.counts())
        service.queue.close()
    sys.exit(0)
