"""What the engine tests share: a load point, a target, a fake program, and a server that records POSTs."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bot.engines import Target
from bot.core.jobs import LoadPoint

POINT = LoadPoint(point_id="c8", concurrency=8, isl=1024, osl=128, num_prompts=200,
                  num_warmups=4, extra_args=["--request-rate", "5"])


def target(engine: str, port: int = 8123) -> Target:
    return Target(host="127.0.0.1", port=port, served_model_name="m", tokenizer="/models/m",
                  engine=engine)


def program(path: Path, body: str) -> str:
    """An executable shell script at `path` (a stand-in for `vllm` or a Python)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


@contextmanager
def recording_server(status: int = 200) -> Iterator[tuple[int, list[tuple[str, str]]]]:
    """A local HTTP server answering every request with `status`; yields (port, [(method, path)])."""
    seen: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append((self.command, self.path))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()
