"""Imports a GPU command's acknowledgement will need, made in a background thread while the handler waits on GitHub."""
from __future__ import annotations

import importlib
import threading
from typing import Any

# After its first GitHub request a /sweep renders its claim (Jinja2) and, once authorized, plans the
# head commit for the estimate (the planner, the recipe catalogue, pydantic models): some 45 ms of
# imports, while the requests before the estimate leave the process idle about as long (far longer
# against github.com). Importing them meanwhile hides that time; the handler's own imports then find
# the modules loaded, or wait for the module being loaded. The order is the handler's own (Jinja2
# first), so the two threads never hold each other's module locks; nothing here runs PR code or reads
# anything: only modules of this package and its dependencies are imported.
GPU_COMMAND = ("jinja2", "bot.control.checkout", "bot.control.estimate", "bot.plan.model", "bot.plan.planner",
               "bot.plan.remote", "bot.recipes.catalog", "bot.recipes.errors", "bot.recipes.sources")


class Warmup:
    """One background thread importing `modules` in turn; join() waits for it (at most `timeout_s`)."""

    def __init__(self, modules: tuple[str, ...]):
        self.failed: str | None = None
        self._thread = threading.Thread(target=self._run, args=(modules,), name="recipe-bot-warmup", daemon=True)
        self._thread.start()

    def _run(self, modules: tuple[str, ...]) -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception as exc:  # the handler's own import of it raises and reports the same
                self.failed = f"{name}: {exc}"
                return

    def join(self, timeout_s: float = 10.0) -> None:
        self._thread.join(timeout_s)


# Who is likely to be allowed to start GPU work, by the comment's author_association: a refusal needs
# no planner, and importing it meanwhile would only add its CPU time to the refusal.
LIKELY_ALLOWED = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})


def start_for(commands: tuple, event: Any) -> Warmup | None:
    """A warm-up when a command starts GPU work (its estimate plans recipes) on a pull request that
    is not a draft, asked by a likely-allowed author (payload hints only: trust.py still decides)."""
    if not event.on_pull or event.draft_hint or event.association not in LIKELY_ALLOWED:
        return None
    if any(command.spec.starts_gpu_work for command in commands):
        return Warmup(GPU_COMMAND)
    return None
