"""InferenceX's sweep labels as plan filters: one primary label picks the scope, canary and fail-fast."""
from __future__ import annotations

from bot.core.messages import msg
from bot.plan.model import PlanError, PlanFilters

# label → (scope, canary, fail_fast), as in InferenceX's docs/ci-procedures.md
PRIMARY_LABELS: dict[str, tuple[str, bool, bool]] = {
    "sweep-enabled": ("lowest", False, False),
    "full-sweep-fail-fast": ("full", True, True),
    "full-sweep-enabled": ("full", True, False),
    "full-sweep-fail-fast-no-canary": ("full", False, True),
    "non-canary-full-sweep-enabled": ("full", False, False),
}
MODIFIER_LABELS = ("all-evals", "evals-only", "agentx-fast")
# Labels InferenceX's workflows also react to that change no row: its CI queue and its sign-off.
QUEUE_LABELS = ("skip_queue", "ci-patchwork", "engine-patch", "ci-patchwork-waived", "ci-checklist-complete")
KNOWN_LABELS = (*PRIMARY_LABELS, *MODIFIER_LABELS, *QUEUE_LABELS)


def check_labels(labels: list[str] | tuple[str, ...]) -> None:
    """On the command line a label is asked for by name, so one the planner does not know is a typo, not noise.

    (A PR's own labels are different: `bug` or `docs` beside a sweep label are normal, so the control
    plane calls filters_for_labels without this check.)
    """
    known = [*PRIMARY_LABELS, *MODIFIER_LABELS]
    for label in labels:
        if label not in known:
            raise PlanError(msg("--label %(label)s is not a sweep label", label=repr(label)), known)


def filters_for_labels(labels: list[str] | tuple[str, ...], base: PlanFilters | None = None) -> PlanFilters:
    """The filters a PR's labels ask for; more than one primary sweep label is an error."""
    primary = [label for label in labels if label in PRIMARY_LABELS]
    if len(primary) > 1:
        raise PlanError(
            msg("PR has multiple conflicting sweep labels (%(labels)s). Pick exactly one.",
                labels=", ".join(sorted(primary))),
            sorted(PRIMARY_LABELS),
        )
    update: dict = {}
    if primary:
        scope, canary, fail_fast = PRIMARY_LABELS[primary[0]]
        update.update(scope=scope, canary=canary, fail_fast=fail_fast)
    if "evals-only" in labels:
        update["evals_only"] = True
    if "all-evals" in labels:
        update["all_evals"] = True
    if "agentx-fast" in labels:  # one warm-up request per lane and a 20-minute AgentX profile
        update["agentx_fast"] = True
    return (base or PlanFilters()).model_copy(update=update)
