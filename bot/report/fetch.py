"""The base branch's latest successful results, fetched from the GPU workflow's `result-*` artifacts."""
from __future__ import annotations

import dataclasses
import io
import pathlib
import zipfile

from bot.control.dispatch import parse_run_title

RESULT_ARTIFACT_PREFIX = "result-"
MERGED_STATES = ("identical", "behind")  # compare base...sha: the commit is part of the base branch


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


def fetch_baseline(client, *, workflow: str, base_branch: str, dest: pathlib.Path, runs_wanted: int = 3,
                   max_candidates: int = 30) -> list[BaselineRun]:
    """Download the results of the newest successful runs that benchmarked a commit of the base branch.

    Every GPU run is dispatched on the default branch, so a run's own branch says nothing: the commit it
    measured is in its title (bot.control.dispatch.RUN_TITLE), and it counts only once that commit is part of the
    base branch (merged, or the base itself). Several runs give the report its noise estimate.
    """
    picked: list[BaselineRun] = []
    merged: dict[str, bool] = {}
    for run in client.list_workflow_runs(workflow)[:max_candidates]:
        if run.status != "completed" or run.conclusion != "success":
            continue
        title = parse_run_title(run.display_title)
        if title is None:
            continue
        if title.sha not in merged:
            merged[title.sha] = client.compare_status(base_branch, title.sha) in MERGED_STATES
        if not merged[title.sha]:
            continue
        artifacts = [a for a in client.list_run_artifacts(run.id)
                     if a.name.startswith(RESULT_ARTIFACT_PREFIX) and not a.expired]
        for artifact in artifacts:
            extract_safely(client.download_artifact(artifact.id), dest / f"run-{run.id}" / artifact.name)
        if artifacts:
            picked.append(BaselineRun(run.id, title.sha, run.html_url, len(artifacts)))
        if len(picked) >= runs_wanted:
            break
    return picked
