"""The base branch's latest successful results, fetched from the GPU workflow's `result-*` artifacts.

Only baseline-mode runs count: runs on the default branch that measured the default branch's own
commit with its own code (a push, the schedule, or a maintainer's `/baseline`). A PR's run never
does, even once its commit is merged: its result.json was written while PR code ran.
"""
from __future__ import annotations

import dataclasses
import io
import pathlib
import shutil
import zipfile

from bot.core.markers import parse_run_title
from bot.core.messages import Message, msg

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


class ArtifactRejected(BaselineFetchError):
    """One artifact that cannot be used (not a zip, a member outside, too large); the others still count."""

    def __init__(self, message: Message) -> None:
        super().__init__(message)
        self.message = message  # shown in each language; str() is its English form

    def __str__(self) -> str:
        return str(self.message)


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one artifact may expand to: results are small JSON files, so the caps are generous."""

    max_total_bytes: int = 256 << 20
    max_members: int = 10_000
    max_ratio: float = 200.0  # uncompressed / compressed, per member (a zip bomb is thousands)


def extract_safely(archive: bytes, dest: pathlib.Path, limits: Limits = Limits()) -> int:
    """Unzip an artifact into dest, all or nothing; raises ArtifactRejected naming why.

    Checked before anything is written: a member that would land outside dest (zip slip), too many
    members, a total or a compression ratio past the limits. The archive's own sizes are not
    trusted: reading stops at the declared size plus one byte. Written to a scratch folder first,
    so a failure half-way (a file and a folder of one name) leaves nothing behind.
    """
    try:
        zipped = zipfile.ZipFile(io.BytesIO(archive))
    except Exception as exc:  # zipfile meets corrupt bytes with a zoo of types (IndexError, struct.error, ...)
        raise ArtifactRejected(msg("not a zip archive (%(error)s)", error=f"{type(exc).__name__}: {exc}")) from None
    with zipped:
        members = [m for m in zipped.infolist() if not m.is_dir()]
        if len(members) > limits.max_members:
            raise ArtifactRejected(msg("%(count)s members, more than %(most)s", count=len(members),
                                       most=limits.max_members))
        dest = dest.resolve()
        total = 0
        for member in members:
            target = (dest / member.filename).resolve()
            if not target.is_relative_to(dest) or target == dest:
                raise ArtifactRejected(msg("member %(member)s points outside the artifact folder",
                                           member=repr(member.filename)))
            total += member.file_size
            if member.file_size > limits.max_ratio * max(member.compress_size, 1) and member.file_size > 1 << 20:
                raise ArtifactRejected(msg("member %(member)s expands %(size)s bytes from %(compressed)s (ratio "
                                           "limit %(ratio)s)", member=repr(member.filename),
                                           size=f"{member.file_size:,}", compressed=f"{member.compress_size:,}",
                                           ratio=f"{limits.max_ratio:g}"))
        if total > limits.max_total_bytes:
            raise ArtifactRejected(msg("expands to %(size)s bytes, more than %(most)s", size=f"{total:,}",
                                       most=f"{limits.max_total_bytes:,}"))
        scratch = dest.with_name(dest.name + ".partial")
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            for member in members:
                target = scratch / member.filename
                target.parent.mkdir(parents=True, exist_ok=True)
                with zipped.open(member) as source:
                    data = source.read(member.file_size + 1)
                if len(data) > member.file_size:
                    raise ArtifactRejected(msg("member %(member)s is larger than its header says",
                                               member=repr(member.filename)))
                target.write_bytes(data)
            if dest.exists():
                raise ArtifactRejected(msg("%(folder)s exists already (two artifacts of one name)", folder=dest.name))
            dest.parent.mkdir(parents=True, exist_ok=True)
            scratch.rename(dest)
        except ArtifactRejected:
            raise
        except Exception as exc:  # corrupt data, unsupported compression, a file where a folder must go
            raise ArtifactRejected(msg("cannot be extracted (%(error)s)", error=f"{type(exc).__name__}: {exc}")) from None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
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
                   max_candidates: int | None = None, problems: list[str] | None = None) -> list[BaselineRun]:
    """Download the results of the newest successful baseline-mode runs of the base branch.

    A baseline run measured the commit it ran from (bot.report.fetch.baseline_sha), and that commit
    must still be part of the base branch. Several runs give the report its noise estimate.
    Runs are read page by page until enough are found. An artifact that cannot be used is skipped and
    described in `problems`; the others still count.
    """
    picked: list[BaselineRun] = []
    merged: dict[str, bool] = {}
    for index, run in enumerate(client.iter_workflow_runs(workflow, event=None)):
        if max_candidates is not None and index >= max_candidates:
            break
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
        used = 0
        for artifact in artifacts:
            folder = dest / f"run-{run.id}" / _safe_name(artifact.name, artifact.id)
            if folder.exists():  # two artifacts of one name: both are kept, apart
                folder = folder.with_name(f"{folder.name}-{artifact.id}")
            try:
                extract_safely(client.download_artifact(artifact.id), folder)
                used += 1
            except ArtifactRejected as exc:
                if problems is not None:
                    problems.append(msg("run %(run)s artifact %(artifact)s: %(problem)s", run=run.id,
                                        artifact=repr(artifact.name), problem=exc.message))
        if used:
            picked.append(BaselineRun(run.id, sha, run.html_url, used))
        if len(picked) >= runs_wanted:
            break
    return picked


def _safe_name(name: str, artifact_id: int) -> str:
    """A folder name from an artifact name: no separators, no dot-dot; the id when nothing is left."""
    cleaned = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name).strip(".")
    return cleaned or f"artifact-{artifact_id}"
