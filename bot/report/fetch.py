"""The base branch's latest successful results, fetched from the GPU workflow's `result-*` artifacts.

Only baseline-mode runs count: runs on the default branch that measured the default branch's own
commit with its own code (a push, the schedule, or a maintainer's `/baseline`). A PR's run never
does, even once its commit is merged: its result.json was written while PR code ran.
"""
from __future__ import annotations

import dataclasses
import io
import pathlib
import zipfile

from bot.control.dispatch import parse_run_title

RESULT_ARTIFACT_PREFIX = "result-"
MERGED_STATES = ("identical", "behind")  # compare base...sha: the commit is part of the base branch
BASELINE_EVENTS = ("push", "schedule")
BASELINE_COMMAND = "/baseline"


@dataclasses.dataclass(frozen=True)
class BaselineRun:
    run_id: int
    sha: str
    html_url: str
    artifacts: int


class BaselineFetchError(RuntimeError):
    pass


def extract_safely(archive: bytes, dest: pathlib.Path) -> int:
    """Unzip an artifact into dest; a member that would land outside dest is refused, not written."""
    dest = dest.resolve()
    with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
        members = [m for m in zipped.infolist() if not m.is_dir()]
        for member in members:
            target = (dest / member.filename).resolve()
            if not target.is_relative_to(dest):
                raise BaselineFetchError(f"artifact member {member.filename!r} points outside {dest}")
        for member in members:
            target = dest / member.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zipped.read(member))
    return len(members)


def baseline_sha(run, base_branch: str) -> str | None:
    """The commit a baseline-mode run measured, or None for any other run (every PR run)."""
    if run.head_branch != base_branch or not run.head_sha:
        return None
    if run.event in BASELINE_EVENTS:
        return run.head_sha
    title = parse_run_title(run.display_title)
    if run.event == "workflow_dispatch" and title is not None and title.pr == 0 \
            and title.command == BASELINE_COMMAND and title.sha == run.head_sha:
        return title.sha  # `/baseline`: dispatched on the default branch, measuring its own tip
    return None


def fetch_baseline(client, *, workflow: str, base_branch: str, dest: pathlib.Path, runs_wanted: int = 3,
                   max_candidates: int = 200) -> list[BaselineRun]:
    """Download the results of the newest successful baseline-mode runs of the base branch.

    A baseline run measured the commit it ran from (bot.report.fetch.baseline_sha), and that commit
    must still be part of the base branch. Several runs give the report its noise estimate.
    """
    picked: list[BaselineRun] = []
    merged: dict[str, bool] = {}
    for run in client.list_workflow_runs(workflow, event=None, pages=2)[:max_candidates]:
        if run.status != "completed" or run.conclusion != "success":
            continue
        sha = baseline_sha(run, base_branch)
        if sha is None:
            continue
        if sha not in merged:
            merged[sha] = client.compare_status(base_branch, sha) in MERGED_STATES
        if not merged[sha]:
            continue
        artifacts = [a for a in client.list_run_artifacts(run.id)
                     if a.name.startswith(RESULT_ARTIFACT_PREFIX) and not a.expired]
        for artifact in artifacts:
            extract_safely(client.download_artifact(artifact.id), dest / f"run-{run.id}" / artifact.name)
        if artifacts:
            picked.append(BaselineRun(run.id, sha, run.html_url, len(artifacts)))
        if len(picked) >= runs_wanted:
            break
    return picked
