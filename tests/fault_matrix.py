"""The fault matrix: GitHub failures (injected by the sandbox) × the commands that write, run as Actions runs them.

Shared by tests/test_fault_matrix.py (assertions) and bench/bench_faults.py (the table). Each cell
sets up its command with a fresh request (a new comment, a new head for a label, a new run to
cancel) in a sandbox shared by the command's cells, delivers the event once under the fault (or kills
the handler, or runs two at once), then delivers it again with GitHub healthy, as a redelivery or a
re-run of the failed job would, and counts what GitHub ended up with for that request.
"""
from __future__ import annotations

import dataclasses
import os
import pathlib
import signal
import subprocess
import sys
import time
from typing import Any

from github_sandbox.harness import SandboxProcess
from handle_helpers import BOT, ROOT, Harness, seed

# Small retry budgets keep a cell short: three attempts, 3 s of waiting in all. The request time-out is not
# small: no healthy request may run out of it, however loaded the machine (at 1 s, the sandbox's GraphQL
# and comment answers timed out beside a second pytest worker). The time-out fault holds its answer well
# past it, so the request it hits is the only one that times out, whatever the load.
REQUEST_TIMEOUT_S = 10
TIMEOUT_FAULT_DELAY_S = REQUEST_TIMEOUT_S + 5  # the client gives up 5 s before the answer would come
FAST_ENV = {"RECIPE_BOT_GITHUB_ATTEMPTS": "3", "RECIPE_BOT_GITHUB_RETRY_BUDGET_S": "3",
            "RECIPE_BOT_GITHUB_BACKOFF_S": "0.05", "RECIPE_BOT_GITHUB_TIMEOUT_S": str(REQUEST_TIMEOUT_S)}

DISPATCH = ("POST", r"/actions/workflows/[^/]+/dispatches$")
NEW_COMMENT = ("POST", r"/issues/\d+/comments$")
EDIT_COMMENT = ("PATCH", r"/issues/comments/\d+$")
CANCEL = ("POST", r"/actions/runs/\d+/cancel$")


@dataclasses.dataclass(frozen=True)
class Command:
    name: str
    write: tuple[str, str]  # the request that does the command's work
    reply: tuple[str, str]  # the request that writes its acknowledgement
    dispatches: int  # GPU runs it should start


COMMANDS = {
    "sweep": Command("sweep", DISPATCH, EDIT_COMMENT, 1),
    "ok-to-test": Command("ok-to-test", NEW_COMMENT, NEW_COMMENT, 0),
    "label": Command("label", DISPATCH, EDIT_COMMENT, 1),
    "cancel": Command("cancel", CANCEL, NEW_COMMENT, 0),
}


def _rule(target: tuple[str, str], **fields: Any) -> dict[str, Any]:
    return {"method": target[0], "path": target[1], **fields}


# fault name → rules for a command (None: the fault is not a rule: kill, parallel, comments)
FAULTS: dict[str, Any] = {
    "5xx-before": lambda c: [_rule(c.write, status=502)],
    "5xx-after": lambda c: [_rule(c.write, status=502, after=True)],
    "timeout-after": lambda c: [_rule(c.write, delay_s=TIMEOUT_FAULT_DELAY_S, after=True)],
    "403-retry-after-1s": lambda c: [_rule(c.write, status=403, headers={"Retry-After": "1"})],
    "403-retry-after-3600s": lambda c: [_rule(c.write, status=403, headers={"Retry-After": "3600"}, count=None)],
    "403-no-retry-after": lambda c: [_rule(c.write, status=403, message="Resource not accessible by integration")],
    "422": lambda c: [_rule(c.write, status=422)],
    "kill-before-reply": None,
    "two-handlers": None,
    "1200-comments": None,
}


@dataclasses.dataclass
class Delivery:
    code: int | None
    stderr: str
    seconds: float


@dataclasses.dataclass
class Cell:
    command: str
    fault: str
    first: Delivery
    second: Delivery
    dispatches: int  # workflow_dispatch runs created for this request, cancelled or not
    active_dispatches: int  # of those, not cancelled
    acks: int  # bot comments carrying the request's final reply marker
    claims_left: int  # claim comments never turned into a reply
    failure_notices: int  # bilingual "GitHub failed / throttled" comments
    effect: bool  # the command's own effect is there (approval recorded, run cancelled)
    seconds: float

    @property
    def tracebacks(self) -> int:
        return sum("Traceback" in d.stderr for d in (self.first, self.second))

    @property
    def first_line(self) -> str:
        lines = [ln for ln in self.first.stderr.splitlines() if ln.strip()]
        if self.first.code is None:
            return "killed"
        return lines[-1] if lines else ""


def _handler(h: Harness, event: str, path: pathlib.Path, env: dict[str, str]) -> subprocess.Popen:
    """`recipe-bot handle` as one run of recipe-bot.yml: the run is in progress while it works, as on
    GitHub, so a claim it writes names a run that another handler can ask about."""
    run = h.sb.add_run("recipe-bot.yml", event=event, status="in_progress", conclusion=None)
    args = [sys.executable, "-c", "from bot.cli import main; main(prog_name='recipe-bot')",
            "handle", "--event-name", event, "--event-path", str(path)]
    proc = subprocess.Popen(args, env={**env, "GITHUB_RUN_ID": str(run["id"]), "GITHUB_RUN_ATTEMPT": "1"},
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.actions_run = run["id"]  # type: ignore[attr-defined]
    return proc


def _finish(proc: subprocess.Popen, started: float, h: Harness, timeout: float = 60) -> Delivery:
    out, err = proc.communicate(timeout=timeout)
    _ended(h, proc)
    return Delivery(proc.returncode, err, time.perf_counter() - started)


def _ended(h: Harness, proc: subprocess.Popen) -> None:
    """GitHub marks the job's run completed when the process exits (or its runner loses it)."""
    h.sb.set_run(proc.actions_run, conclusion="success" if proc.returncode == 0 else "failure")


def _deliver(h: Harness, event: str, path: pathlib.Path, env: dict[str, str]) -> Delivery:
    started = time.perf_counter()
    return _finish(_handler(h, event, path, env), started, h)


def _kill_at_reply(h: Harness, command: Command, event: str, path: pathlib.Path, env: dict[str, str]) -> Delivery:
    """The reply request hangs (then fails); the handler is SIGKILLed while waiting for it."""
    h.sb.add_faults(_rule(command.reply, status=504, delay_s=30))
    started = time.perf_counter()
    proc = _handler(h, event, path, env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        if any(rule["fired"] for rule in h.sb.state()["faults"]):
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=10)
    _ended(h, proc)
    return Delivery(None, err, time.perf_counter() - started)


def _setup(h: Harness, command: str, tag: str) -> tuple[str, pathlib.Path, str, int]:
    """The event to deliver, its file, the request key, and the PR; plus what the command needs."""
    if command == "sweep":
        cid = h.comment(7, "carol", "/sweep")
        return "issue_comment", h.event_file("issue_comment", "created", comment_id=cid), str(cid), 7
    if command == "ok-to-test":
        cid = h.comment(9, "alice", f"/ok-to-test {h.head(9)}")  # the full SHA (#17)
        return "issue_comment", h.event_file("issue_comment", "created", comment_id=cid), str(cid), 9
    if command == "label":  # a label runs once per head: each cell labels a new head
        h.push(f"name: tiny\ncell: {tag}\n")
        h.label(7, "carol", "sweep-enabled")
        path = h.event_file("pull_request", "labeled", pull=7, label="sweep-enabled", sender="carol")
        return "pull_request", path, "label-sweep-enabled", 7
    if command == "cancel":
        inputs = {"pr": "7", "sha": h.head(7), "command": "/sweep", "requester": "carol", "comment_id": f"run-{tag}"}
        h.sb.add_run("gpu.yml", inputs=inputs, status="in_progress", conclusion=None)
        cid = h.comment(7, "carol", "/cancel")
        return "issue_comment", h.event_file("issue_comment", "created", comment_id=cid), str(cid), 7
    raise ValueError(command)


def _count(h: Harness, command: Command, key: str, pr: int, tag: str, first_id: int) -> dict[str, Any]:
    state = h.sb.state()
    from bot.core import markers

    mine = [r for r in state["workflow_runs"] if r["event"] == "workflow_dispatch"
            and (t := markers.parse_run_title(r["display_title"])) and t.key == key and t.sha == h.head(7)]
    bot_comments = [c for c in state["comments"] if c["issue"] == pr and c["user"] == BOT and c["id"] > first_id]
    marker = f"<!-- recipe-bot:ack comment={key} " if command.dispatches else f"<!-- recipe-bot:reply comment={key} "
    acks = sum(any(line.startswith(marker) for line in c["body"].splitlines()[:4]) for c in bot_comments)
    claims = sum(f"recipe-bot:claim comment={key} " in c["body"] for c in bot_comments)
    notices = sum("GitHub failed" in c["body"] or "GitHub throttled" in c["body"] for c in bot_comments)
    if command.name == "ok-to-test":
        effect = any(c["body"].startswith(marker) and "<!-- recipe-bot:ok-to-test sha=" in c["body"]
                     for c in bot_comments)
    elif command.name == "cancel":
        effect = all(r["conclusion"] == "cancelled" for r in state["workflow_runs"]
                     if r["inputs"].get("comment_id") == f"run-{tag}")
    else:
        effect = len([r for r in mine if r["conclusion"] != "cancelled"]) == 1
    return {"dispatches": len(mine), "active_dispatches": len([r for r in mine if r["conclusion"] != "cancelled"]),
            "acks": acks, "claims_left": claims, "failure_notices": notices, "effect": effect}


class Matrix:
    """One sandbox per command (and one more, with 1,200 comments, per command), started on first use."""

    def __init__(self, tmp: pathlib.Path):
        self.tmp = tmp
        self._open: dict[tuple[str, bool], tuple[SandboxProcess, Harness]] = {}

    def harness(self, command: str, crowded: bool) -> Harness:
        if (command, crowded) not in self._open:
            folder = self.tmp / f"{command}-{'crowded' if crowded else 'plain'}"
            folder.mkdir(parents=True)
            extra = None
            if crowded:  # the request's comment comes after 1,200 older ones, a third of them the bot's
                filler = [{"user": "bob" if i % 3 else BOT, "body": f"earlier comment {i}"} for i in range(1200)]
                extra = {"pulls": [{**p, "comments": filler if p["number"] in (7, 9) else []} for p in _pulls()]}
            sb = SandboxProcess(seed(folder, extra=extra)).start()
            self._open[(command, crowded)] = (sb, Harness(sb, folder))
        return self._open[(command, crowded)][1]

    def problems(self) -> list[dict[str, Any]]:
        return [p for sb, _ in self._open.values() for p in sb.problems()]

    def close(self) -> None:
        for sb, _ in self._open.values():
            sb.stop()
        self._open.clear()


def run_cell(matrix: Matrix, command_name: str, fault: str) -> Cell:
    command = COMMANDS[command_name]
    h = matrix.harness(command_name, fault == "1200-comments")
    sb = h.sb
    started = time.perf_counter()
    env = {**h.env, **FAST_ENV}
    first_id = max((c["id"] for c in sb.state()["comments"]), default=0)
    event, path, key, pr = _setup(h, command_name, fault)
    rules = FAULTS[fault]
    if rules is not None:
        sb.add_faults(*rules(command))
        first = _deliver(h, event, path, env)
    elif fault == "kill-before-reply":
        first = _kill_at_reply(h, command, event, path, env)
    elif fault == "two-handlers":
        t0 = time.perf_counter()
        procs = [_handler(h, event, path, env) for _ in range(2)]
        both = [_finish(p, t0, h) for p in procs]
        first = Delivery(max(d.code or 0 for d in both), "\n".join(d.stderr for d in both),
                         max(d.seconds for d in both))
    else:
        first = _deliver(h, event, path, env)
    sb.clear_faults()
    second = _deliver(h, event, path, env)  # a redelivery, or the failed job re-run
    counts = _count(h, command, key, pr, fault, first_id)
    return Cell(command_name, fault, first, second, seconds=time.perf_counter() - started, **counts)


def _pulls() -> list[dict[str, Any]]:
    from handle_helpers import PULLS

    return [dict(p) for p in PULLS]


def cells() -> list[tuple[str, str]]:
    return [(c, f) for f in FAULTS for c in COMMANDS]


if __name__ == "__main__":  # one cell by hand: python tests/fault_matrix.py sweep 5xx-after
    import tempfile

    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    with tempfile.TemporaryDirectory() as tmpdir:
        matrix = Matrix(pathlib.Path(tmpdir))
        try:
            cell = run_cell(matrix, sys.argv[1], sys.argv[2])
        finally:
            matrix.close()
        print(cell)
        print(os.linesep.join([cell.first.stderr, "----", cell.second.stderr]))
