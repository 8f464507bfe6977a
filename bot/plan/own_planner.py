"""A pull request that changes InferenceX's own planner: its rows wait for `/approve-planner`, then the head's planner plans them.

For an InferenceX repository the rows of a plan are what InferenceX's own tools print, taken from the
base (bot/inferencex/own_tools.py). A PR that edits those tools (the processor, the generator or a file
they import) means rows the base's tools do not plan: a new changelog field the base refuses, a new kind
of row. Those tools are PR code, and what they print decides what runs on whose GPUs, so:

- without an approval the plan is made with the base's tools and every InferenceX row is held (in
  `inferencex.held`, not in a matrix), with a note naming the changed files, what the base's tools plan
  (or why they cannot) and the command that lets the head's tools plan;
- `/approve-planner <full sha> --max-gpu-hours N` from a code owner of every changed planner file (the
  control plane's ledger, bot/control) reaches the plan job as `--approved-planner SHA
  --planner-max-gpu-hours N`; for exactly that head the head's own tools then plan, in the same sandbox
  as the base's, and the rows run when they fit in N GPU-hours (otherwise they stay held, with a note);
- the runner-label and image checks (bot/plan/allowed.py) apply to those rows as to any others.
"""
from __future__ import annotations

import dataclasses
import math

from bot.core.messages import Message, msg
from bot.inferencex.own_tools import changed_tool_files
from bot.plan.held import entry_hours, hold_rows
from bot.plan.model import Plan
from bot.recipes.errors import RecipeError
from bot.recipes.sources import GitSource, Source

APPROVE_COMMAND = "approve-planner"


@dataclasses.dataclass(frozen=True)
class PlannerGrant:
    """An approval of one head's own planner, as the control plane passes it: the full head SHA and the
    GPU-hours the approval allows its rows."""

    sha: str
    max_gpu_hours: float


@dataclasses.dataclass(frozen=True)
class PlannerChange:
    """Whose tools plan this change, and why."""

    files: tuple[str, ...]  # the planner files the change edits (none: the usual case, the base's tools plan)
    tools: Source | None  # the source whose tools plan (None: the base's, as always)
    grant: PlannerGrant | None  # the approval in force for this head, if any
    head_sha: str

    @property
    def waits(self) -> bool:
        """The rows wait for an approval: the change edits the planner and nobody approved this head."""
        return bool(self.files) and self.grant is None


def head_sha(head: Source) -> str:
    """The head's full SHA where the source knows it (a git commit; the contents API's ref), else its label."""
    if isinstance(head, GitSource):
        return head.sha
    return getattr(head, "ref", None) or head.label


def approve_line(sha: str, hours: float | None = None) -> str:
    cap = str(max(1, math.ceil(hours))) if hours else "N"  # what the base's tools plan, as a first cap
    return f"/{APPROVE_COMMAND} {sha} --max-gpu-hours {cap}"


def whose_tools(plan: Plan, base: Source | None, head: Source, grant: PlannerGrant | None) -> PlannerChange:
    """Which tools plan `base..head` (pure but for reading the two sources); a grant that does not apply is
    named in the plan's notes and ignored."""
    sha = head_sha(head)
    files = tuple(changed_tool_files(base, head)) if base is not None else ()
    if grant is not None and grant.sha != sha:
        plan.notes.append(msg("the planner approval for %(approved)s is ignored: the head is %(head)s (a push needs "
                              "a new approval)", approved=grant.sha, head=sha))
        grant = None
    if grant is not None and not files:
        plan.notes.append(msg("the planner approval for %(head)s is ignored: this change edits none of InferenceX's "
                              "planner files, so the base's tools plan it", head=sha))
        grant = None
    return PlannerChange(files, head if grant is not None else None, grant, sha)


def _files(change: PlannerChange) -> str:
    return ", ".join(change.files)


def settle(plan: Plan, change: PlannerChange, failure: RecipeError | None) -> None:
    """After the InferenceX rows are planned: hold them all while the head's planner waits for its approval,
    or while the head's planner plans more than its approval allows; say so in the notes and in
    `inferencex.planner`."""
    if not change.files or plan.inferencex is None:
        return
    held: list = []
    if change.grant is not None:
        hours = sum(r.gpu_hours for r in plan.recipes if r.source == "inferencex")
        if hours <= change.grant.max_gpu_hours + 1e-9:
            note = msg("InferenceX rows planned by this pull request's own planner (it changes %(files)s), approved "
                       "for %(head)s: about %(gpu_hours)s GPU-hours of the %(max_hours)s approved",
                       files=_files(change), head=change.head_sha, gpu_hours=f"{hours:,.1f}",
                       max_hours=f"{change.grant.max_gpu_hours:g}")
        else:
            held = hold_rows(plan, lambda entry: True)
            note = msg("held: this pull request's own planner plans %(rows)s row(s), about %(gpu_hours)s GPU-hours, "
                       "more than the %(max_hours)s its approval allows; nothing of it runs until it is approved "
                       "again with a cap that covers it: `%(command)s`", rows=len(held),
                       gpu_hours=f"{entry_hours(held):,.1f}", max_hours=f"{change.grant.max_gpu_hours:g}",
                       command=approve_line(change.head_sha, entry_hours(held)))
    else:
        held = hold_rows(plan, lambda entry: True)
        note = waiting_note(change, held_hours=entry_hours(held) if held else None, rows=len(held), failure=failure)
    plan.notes.insert(0, note)
    plan.inferencex.planner = {"files": list(change.files), "tools": "head" if change.tools is not None else "base",
                               "held": change.grant is None or bool(held), "note": note}


def waiting_note(change: PlannerChange, *, held_hours: float | None, rows: int, failure: RecipeError | None
                 ) -> Message:
    """The plan's note while the head's planner waits: the files, what the base's tools make of the head,
    and the exact command that lets the head's tools plan."""
    if failure is not None:
        base = msg("the base's tools cannot plan this head (%(why)s)", why=failure.problems[0].as_message())
    else:
        base = msg("the base's tools plan %(rows)s row(s), about %(gpu_hours)s GPU-hours", rows=rows,
                   gpu_hours=f"{held_hours or 0.0:,.1f}")
    return msg("held: this pull request changes InferenceX's own planner (%(files)s); %(base)s. No InferenceX row "
               "runs until a code owner of every changed planner file approves this exact commit, with the "
               "GPU-hours its rows may use: `%(command)s`. A later push needs a new approval",
               files=_files(change), base=base, command=approve_line(change.head_sha, held_hours))
