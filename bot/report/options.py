"""What `recipe-bot report` was asked to do, as one typed object: sources, identity, posting, gate."""
from __future__ import annotations

import dataclasses
import pathlib


@dataclasses.dataclass(frozen=True)
class Sources:
    """Where the results, the plan, the baseline and the thresholds come from."""

    results_dir: pathlib.Path
    jobs_path: pathlib.Path | None = None  # the plan: missing jobs become lost
    baseline_dir: pathlib.Path | None = None
    base_branch: str | None = None  # download the baseline of this branch first
    workflow: str = "gpu.yml"
    config_path: pathlib.Path | None = None


@dataclasses.dataclass(frozen=True)
class Identity:
    """What the report is about, where the results do not say it themselves."""

    repo: str | None = None
    pr: int | None = None
    sha: str | None = None
    run_url: str | None = None
    command_text: str | None = None


@dataclasses.dataclass(frozen=True)
class Posting:
    """Whether and as whom the comment and the check run are posted."""

    do_post: bool = False
    dry_run: bool = False
    bot_login: str | None = None
    check_name: str | None = None


@dataclasses.dataclass(frozen=True)
class ReportOptions:
    sources: Sources
    identity: Identity = Identity()
    posting: Posting = Posting()
    out_dir: pathlib.Path = pathlib.Path("report-out")
    gate_on: bool = False  # post the head SHA's merge gate
    required_dir: pathlib.Path | None = None  # with gate_on: what the PR requires
    fail_on_failure: bool = False

    @classmethod
    def from_cli(cls, **values: object) -> ReportOptions:
        """The options from click's keyword arguments (one per flag), each into its group."""
        groups = {}
        for group in (Sources, Identity, Posting):
            names = [f.name for f in dataclasses.fields(group)]
            groups[group] = group(**{n: values.pop(n) for n in names if n in values})
        return cls(sources=groups[Sources], identity=groups[Identity], posting=groups[Posting], **values)
