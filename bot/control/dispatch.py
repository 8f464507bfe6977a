"""The PR's GPU runs cancelled: all of them, or all but those for the head being kept."""
from __future__ import annotations

from bot.control.client import RunsClient
from bot.core.markers import PrRun, pr_runs


def cancel_active(client: RunsClient, workflow: str, pr: int, *, keep_sha: str | None = None,
                  runs: list[PrRun] | None = None) -> list[PrRun]:
    """Cancel the PR's queued and running runs (all, or all but those for `keep_sha`)."""
    runs = pr_runs(client.list_workflow_runs(workflow), pr) if runs is None else runs
    doomed = [r for r in runs if r.run.active and r.title.sha != keep_sha]
    for r in doomed:
        client.cancel_run(r.run.id)
    return doomed
