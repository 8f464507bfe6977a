"""The sandbox seed file (a contract, see docs/sandbox.md): strict schema, errors that name the file, line and field."""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

PERMISSIONS = ("none", "read", "triage", "write", "maintain", "admin")
Permission = Literal["none", "read", "triage", "write", "maintain", "admin"]
RunStatus = Literal["queued", "in_progress", "completed", "waiting", "requested", "pending"]
Conclusion = Literal["success", "failure", "neutral", "cancelled", "skipped", "timed_out", "action_required"]
DEFAULT_WORKFLOWS = (("recipe-bot.yml", "recipe-bot"), ("gpu.yml", "GPU benchmarks"))


class SeedError(ValueError):
    """A seed problem, already formatted as `file:line: field: what is wrong` (the problems the sandbox words
    itself in English, then 简体中文 on the next line: the sandbox cannot use the bot's catalogue)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SeedComment(_Strict):
    id: int | None = None
    user: str
    body: str
    created: str | None = None  # ISO 8601; default: when the sandbox starts


class SeedReview(_Strict):
    id: int | None = None
    user: str
    state: Literal["APPROVED", "CHANGES_REQUESTED", "COMMENTED"]
    body: str = ""
    commit: str | None = None  # default: the pull's head SHA


class SeedIssue(_Strict):
    number: int = Field(gt=0)
    title: str = ""
    body: str | None = ""
    author: str
    labels: list[str] = []
    comments: list[SeedComment] = []
    state: Literal["open", "closed"] = "open"


class SeedPull(SeedIssue):
    head: str
    base: str | None = None  # default: default_branch
    fork: bool = False  # head lives in <author>/<repo name>, as a fork would
    draft: bool = False
    merged: bool = False
    head_sha: str | None = None  # pin the head to this commit until the next push to `head`
    reviews: list[SeedReview] = []

    @model_validator(mode="after")
    def _merged_is_closed(self) -> "SeedPull":
        if self.merged:
            self.state = "closed"
        return self


class SeedWorkflow(_Strict):
    file: str  # e.g. gpu.yml (lives at .github/workflows/<file>)
    name: str | None = None
    id: int | None = None
    state: Literal["active", "deleted", "disabled_fork", "disabled_inactivity", "disabled_manually"] = "active"


class SeedLabel(_Strict):
    name: str
    color: str = "ededed"
    description: str | None = None


class SeedArtifact(_Strict):
    name: str
    files: dict[str, str] = {}  # path inside the zip → text
    zip_base64: str | None = None  # the archive's bytes as they are, instead of files (a broken artifact)


class SeedJob(_Strict):
    name: str
    status: RunStatus = "completed"
    conclusion: Conclusion | None = None
    labels: list[str] | None = None  # the job's `runs-on` labels (default: ["self-hosted"])
    created_at: str | None = None  # ISO 8601 with a zone, e.g. 2026-01-01T10:00:00Z (default: now)
    started_at: str | None = None  # when a runner took it (a queued job: GitHub repeats created_at)

    @field_validator("created_at", "started_at")
    @classmethod
    def _iso_time(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                raise ValueError("must be an ISO 8601 time such as 2026-01-01T10:00:00Z") from None
            if when.tzinfo is None:
                raise ValueError("needs a time zone, e.g. 2026-01-01T10:00:00Z")
        return value


class SeedRun(_Strict):
    id: int | None = None
    workflow: str  # the workflow's file name or id
    branch: str | None = None  # default: default_branch
    head_sha: str | None = None  # default: the branch's SHA
    event: str = "workflow_dispatch"
    status: RunStatus = "completed"
    conclusion: Conclusion | None = None
    actor: str | None = None  # default: the bot
    inputs: dict[str, str] = {}
    jobs: list[SeedJob] = []
    artifacts: list[SeedArtifact] = []


class Seed(_Strict):
    repository: str
    default_branch: str = "main"
    git: str = "./repo"
    bot: str = "recipe-bot[bot]"
    owner_type: Literal["Organization", "User"] = "Organization"
    users: dict[str, Permission] = {}
    teams: dict[str, list[str]] = {}
    labels: list[SeedLabel] = []
    workflows: list[SeedWorkflow] = Field(
        default_factory=lambda: [SeedWorkflow(file=f, name=n) for f, n in DEFAULT_WORKFLOWS])
    pulls: list[SeedPull] = []
    issues: list[SeedIssue] = []
    workflow_runs: list[SeedRun] = []
    # Instead of `git`: branch -> {path: text, or {from: file relative to the seed}, or null}; the
    # sandbox builds the repository at start (sandbox/github_sandbox/seedrepo.py).
    branches: dict[str, dict[str, str | dict[Literal["from"], str] | None]] | None = None

    @field_validator("repository")
    @classmethod
    def _owner_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9-]+/[A-Za-z0-9._-]+", value):
            raise ValueError("must be owner/name, e.g. acme/bench")
        return value

    @field_validator("teams")
    @classmethod
    def _team_keys(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for key in value:
            if not re.fullmatch(r"[A-Za-z0-9-]+/[A-Za-z0-9._-]+", key):
                raise ValueError(f"team {key!r} must be org/slug, e.g. acme/core")
        return value

    @model_validator(mode="after")
    def _unique_numbers(self) -> "Seed":
        numbers = [p.number for p in self.pulls] + [i.number for i in self.issues]
        dupes = sorted({n for n in numbers if numbers.count(n) > 1})
        if dupes:
            raise ValueError(f"pull and issue numbers must be unique; repeated: {dupes}")
        ids = [c.id for item in [*self.pulls, *self.issues] for c in item.comments if c.id is not None]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"comment ids must be unique; repeated: {dupes}")
        return self

    @property
    def owner(self) -> str:
        return self.repository.split("/")[0]

    @property
    def name(self) -> str:
        return self.repository.split("/")[1]


@dataclass
class SeedFile:
    seed: Seed
    path: Path
    root: Any  # the composed YAML node tree, for line numbers

    @property
    def git_dir(self) -> Path:
        return (self.path.parent / self.seed.git).resolve()

    def error(self, loc: tuple[Any, ...], message: str) -> SeedError:
        return SeedError(f"{self.path}:{_line_of(self.root, loc)}: {_dotted(loc)}: {message}")


def _dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _line_of(node: Any, loc: tuple[Any, ...]) -> int:
    line = node.start_mark.line + 1 if node is not None else 1
    for part in loc:
        nxt = None
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if k.value == str(part)), None)
            if nxt is None:
                break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            nxt = node.value[part]
        else:
            break
        node = nxt
        line = node.start_mark.line + 1
    return line


def load_seed(path: str | Path) -> SeedFile:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SeedError(f"{path}: cannot read the seed file: {exc.strerror}\n{path}：无法读取 seed 文件：{exc.strerror}") from None
    try:
        root = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        problem = getattr(exc, "problem", exc)
        raise SeedError(f"{path}:{line}: not valid YAML: {problem}\n{path}:{line}：不是有效的 YAML：{problem}") from None
    if not isinstance(data, dict):
        raise SeedError(f"{path}:1: the seed must be a mapping with at least `repository: owner/name`\n"
                        f"{path}:1：seed 必须是映射，至少包含 `repository: owner/name`")
    try:
        seed = Seed.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = f"unknown key; accepted keys here: {_accepted(loc)}"
        elif err["type"] == "literal_error":
            msg = f"{msg} (got {err.get('input')!r})"
        raise SeedError(f"{path}:{_line_of(root, loc)}: {_dotted(loc)}: {msg}") from None
    from .seedrepo import build  # the repository a seed's `branches` describe

    return build(SeedFile(seed=seed, path=path.resolve(), root=root))


def _accepted(loc: tuple[Any, ...]) -> str:
    model: type[BaseModel] = Seed
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            break
        inner = _model_in(field.annotation)
        if inner is None:
            break
        model = inner
    return ", ".join(model.model_fields)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found:
            return found
    return None
