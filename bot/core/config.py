"""The repository config `.github/recipe-bot.yaml`: strict schema, read from the default branch only."""
from __future__ import annotations

import functools
import re
from typing import Annotated, Any, Literal, Protocol

import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from bot.core import commands
from bot.core.messages import Message, msg
from bot.core.validation import error_message

CONFIG_PATH = ".github/recipe-bot.yaml"
PERMISSIONS = ("none", "read", "triage", "write", "maintain", "admin")
DEFAULT_THRESHOLDS = {"tput_per_gpu": 5.0, "ttft_p99": 10.0}
# InferenceX's own label names (docs/ci-procedures.md, run-sweep.yml) with the flags they stand for,
# and `full-sweep` as before; the labels on one PR combine into one run (commands.combine_label_commands).
DEFAULT_LABELS = {
    "sweep-enabled": "/sweep --scope lowest",
    "full-sweep": "/sweep --scope full",
    "full-sweep-enabled": "/sweep --scope full",
    "full-sweep-fail-fast": "/sweep --scope full --fail-fast",
    "full-sweep-fail-fast-no-canary": "/sweep --scope full --fail-fast --no-canary",
    "non-canary-full-sweep-enabled": "/sweep --scope full --no-canary",
    "evals-only": "/sweep --evals-only",
    "all-evals": "/sweep --all-evals",
    "agentx-fast": "/sweep --agentx-fast",
}
LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$")
TEAM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
WORKFLOW_FILE = re.compile(r"^[A-Za-z0-9_.-]+\.ya?ml$")

Permission = Literal["none", "read", "triage", "write", "maintain", "admin"]


class ConfigError(ValueError):
    """One clear error: the file, the line, the field and what would be accepted."""

    def __init__(self, source: str, line: int | None, field: str, message: Message | str):
        self.source, self.line, self.field, self.message = source, line, field, message
        super().__init__(str(self.located))

    @property
    def located(self) -> Message:
        """The error with its place, in every language (`file:line: field: message`)."""
        where = f"{self.source}:{self.line}" if self.line else self.source
        if self.field:
            return msg("%(where)s: %(field)s: %(problem)s", where=where, field=self.field, problem=self.message)
        return msg("%(where)s: %(problem)s", where=where, problem=self.message)


def _percent(value: Any) -> Any:
    if isinstance(value, str) and value.strip().endswith("%"):
        return value.strip()[:-1]
    return value


Percent = Annotated[float, BeforeValidator(_percent), Field(gt=0, le=1000)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _login(value: str) -> str:
    if not LOGIN.match(value):
        raise ValueError(msg("%(value)s is not a GitHub login", value=repr(value)))
    return value


def _team(value: str) -> str:
    if not TEAM.match(value):
        raise ValueError(msg("%(value)s is not a team; write it as org/team-slug", value=repr(value)))
    return value


def _command_name(value: str) -> str:
    if value not in commands.REGISTRY:
        raise ValueError(msg("no command %(value)s; accepted: %(accepted)s", value=repr(value),
                             accepted=", ".join(commands.REGISTRY)))
    return value


def _label_command(line: str) -> str:
    try:
        command = commands.parse_single(line)
    except commands.UsageError as exc:
        raise ValueError(msg("%(where)s: %(problem)s", where=repr(line), problem=exc.message)) from None
    if command.name not in ("sweep", "e2e"):
        raise ValueError(msg("a label may start /sweep or /e2e, not /%(name)s", name=command.name))
    return line


Login = Annotated[str, AfterValidator(_login)]
TeamName = Annotated[str, AfterValidator(_team)]
CommandName = Annotated[str, AfterValidator(_command_name)]
LabelCommand = Annotated[str, AfterValidator(_label_command)]


class Trusted(Strict):
    """Accounts trusted like write collaborators, whatever their repository permission."""

    users: list[Login] = Field(default_factory=list)
    teams: list[TeamName] = Field(default_factory=list)  # "org/team-slug"


class Report(Strict):
    """Read by the report: regression thresholds in percent per metric."""

    thresholds: dict[str, Percent] = Field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))

    @field_validator("thresholds")
    @classmethod
    def _with_defaults(cls, thresholds: dict[str, float]) -> dict[str, float]:
        return {**DEFAULT_THRESHOLDS, **thresholds}


REGISTRY = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9._-]+)*$")


def _registry(value: str) -> str:
    if not REGISTRY.match(value):
        raise ValueError(msg("%(value)s is not a registry such as docker.io/vllm or ghcr.io/acme", value=repr(value)))
    return value


class Checklist(Strict):
    """The PR_REVIEW_CHECKLIST sign-off (bot/checklist/): which template is current and the rules' settings."""

    template: str = "checklists/PR_REVIEW_CHECKLIST.md"
    template_zh: str | None = "checklists/PR_REVIEW_CHECKLIST_zh.md"
    version: int = Field(default=1, ge=1)
    allowed_registries: list[Annotated[str, AfterValidator(_registry)]] = Field(
        default_factory=lambda: ["docker.io/vllm", "docker.io/lmsysorg"])
    allow_author_signoff: bool = False
    waiver: str = "docs/waiver/{pr}.md"  # the file a sign-off links to excuse an engine patch

    @field_validator("waiver")
    @classmethod
    def _waiver(cls, value: str) -> str:
        if "{pr}" not in value:
            raise ValueError(msg("%(value)s must contain {pr}, e.g. docs/waiver/{pr}.md", value=repr(value)))
        return value


class PrJobs(Strict):
    """What the GPU runs of pull requests may use; read from the default branch like the rest."""

    runner_labels: list[str] = Field(default_factory=list)  # besides recipes/_runners.yaml's, on the default branch
    images: list[str] = Field(default_factory=list)  # container images a job may name (exact strings)
    # For authors who need an approval (forks, no write permission): what one approval allows.
    scopes: list[Literal["lowest", "full"]] = Field(default_factory=lambda: ["lowest", "full"])
    runs_per_approval: int = Field(default=0, ge=0, le=1000)  # 0: no limit
    allow_persistent_runners: bool = False  # run PR jobs on a self-hosted runner not marked ephemeral


class Gate(Strict):
    """The merge gate: the commands whose plans a PR must pass (at the PR's head commit)."""

    required: list[LabelCommand] = Field(default_factory=lambda: ["/sweep", "/e2e"])


class Budget(Strict):
    """GPU-hours a command may plan before a maintainer's `/approve-budget <sha>` (unset: no limit)."""

    gpu_hours_per_command: float | None = Field(default=None, gt=0)
    gpu_hours_per_pr_per_day: float | None = Field(default=None, gt=0)  # started in the last 24 hours


class PlanSettings(Strict):
    """How a plan reads a change (the defaults depend on the repository's kind)."""

    # A change to shared files (a launcher under runners/, a benchmark script, benchmark_lib.sh):
    # "run" plans every config that uses it; "note" plans what the changelog declares and names the
    # configs the change affects, the command that would run them and its GPU-hours in a note.
    # Unset: "note" for an InferenceX repository (its perf-changelog.yaml declares what runs),
    # "run" for recipes/ (the shared-infra rule of recipes/_runners.yaml; "note" is not read there yet).
    infra: Literal["run", "note"] | None = None

    def infra_rule(self, inferencex: bool) -> str:
        return self.infra or ("note" if inferencex else "run")


class RepoConfig(Strict):
    """What a repository tells recipe-bot; every field has a safe default."""

    bot_login: Login | None = None  # the login the bot's token acts as; None: ask GET /user
    gpu_workflow: str = "gpu.yml"
    recipes_dir: str = Field(default="recipes", pattern=r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")  # afd-plugin: recipe
    trusted: Trusted = Field(default_factory=Trusted)
    permissions: dict[CommandName, Permission] = Field(default_factory=dict)  # command → minimum permission
    cooldown_seconds: int = Field(default=0, ge=0, le=7 * 24 * 3600)
    allow_edits: bool = True  # an edited comment is read again (never to start a second run)
    labels: dict[str, LabelCommand] = Field(default_factory=lambda: dict(DEFAULT_LABELS))
    report: Report = Field(default_factory=Report)
    checklist: Checklist | None = None  # the PR_REVIEW_CHECKLIST sign-off; on when the section exists
    pr_jobs: PrJobs = Field(default_factory=PrJobs)
    gate: Gate = Field(default_factory=Gate)
    budget: Budget = Field(default_factory=Budget)
    plan: PlanSettings = Field(default_factory=PlanSettings)

    @field_validator("gpu_workflow")
    @classmethod
    def _workflow(cls, name: str) -> str:
        if not WORKFLOW_FILE.match(name):
            raise ValueError(msg("%(value)s is not a workflow file name such as gpu.yml", value=repr(name)))
        return name

    def min_permission(self, command: str) -> str:
        return self.permissions.get(command, commands.REGISTRY[command].min_permission)

    def label_command(self, label: str) -> commands.Command | None:
        line = self.labels.get(label)
        return commands.parse_single(line) if line is not None else None


def load_config(text: str, source: str = CONFIG_PATH) -> RepoConfig:
    """Parse and validate the config text; raises ConfigError naming the file, line and field. A text is
    parsed once per process (`recipe-bot serve` reads the same config for every delivery): the model is
    frozen, so one object serves every reader."""
    return _parsed_config(text, source)


@functools.lru_cache(maxsize=32)
def _parsed_config(text: str, source: str) -> RepoConfig:
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()  # yaml.compose(text)
        if root is None:
            return RepoConfig()
        if not isinstance(root, yaml.MappingNode):
            raise ConfigError(source, root.start_mark.line + 1, "", msg("the file must be a mapping of settings"))
        _reject_duplicate_keys(root, source, ())
        # yaml.safe_load(text) without parsing the text twice: the same loader builds the data from the
        # node. A merge key (`<<`) makes the constructor rewrite the node, whose lines errors name: those
        # files are parsed again for the data instead.
        data = loader.construct_document(root) if "<<" not in text and "merge" not in text else yaml.safe_load(text)
    except yaml.YAMLError as exc:  # composing, or constructing (an unknown tag, bad !!binary)
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(source, mark.line + 1 if mark else None, "", msg("not valid YAML: %(problem)s",
                                                                          problem=problem)) from None
    finally:
        loader.dispose()
    try:
        return RepoConfig.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = tuple(error["loc"])
        field = ".".join(str(part) for part in loc if part != "[key]") or "(top level)"
        message = error_message(error)  # a validator's own Message, or pydantic's wording as one
        if error["type"] == "extra_forbidden":
            message = msg("unknown key; accepted: %(accepted)s", accepted=", ".join(_accepted_keys(loc)))
        raise ConfigError(source, _line_of(root, loc), field, message) from None


def _accepted_keys(loc: tuple[Any, ...]) -> list[str]:
    model: type[BaseModel] = RepoConfig
    for part in loc[:-1]:
        annotation = model.model_fields[str(part)].annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
    return list(model.model_fields)


def _line_of(node: yaml.Node, loc: tuple[Any, ...]) -> int:
    line = node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == str(part):
                    line, node = key.start_mark.line + 1, value
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _reject_duplicate_keys(node: yaml.Node, source: str, path: tuple[str, ...]) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            name = str(key.value)
            if name in seen:
                raise ConfigError(source, key.start_mark.line + 1, ".".join((*path, name)),
                                  msg("duplicate key; write each key once"))
            seen.add(name)
            _reject_duplicate_keys(value, source, (*path, name))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _reject_duplicate_keys(item, source, (*path, str(index)))


class ContentReader(Protocol):
    def get_text(self, path: str, ref: str) -> str | None: ...


def read_repo_config(client: ContentReader, default_branch: str) -> RepoConfig:
    """The config as committed on the default branch; a PR can never change its own rules."""
    return config_from_text(client.get_text(CONFIG_PATH, ref=default_branch), default_branch)


def config_from_text(text: str | None, default_branch: str) -> RepoConfig:
    """The config file's text as read from the default branch (None: there is none, so the defaults)."""
    return RepoConfig() if text is None else load_config(text, f"{CONFIG_PATH}@{default_branch}")
