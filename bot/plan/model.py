"""The planner's typed input (filters) and output (the plan the GPU workflow consumes).

Plain classes, not pydantic models: planning an InferenceX catalogue makes thousands of them and
`recipe-bot plan` on an InferenceX-only repository then never imports pydantic (about 0.09 s of a
0.3 s run). Each keeps the part of pydantic's interface the rest of the bot uses (`model_dump`,
`model_copy`) with pydantic's output: floats stay floats, tuples dump as lists in JSON mode, nested
models honour `exclude_none`, and the filters are checked when made (a TypeError: see PlanFilters).
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from bot.core.messages import Message, msg

if TYPE_CHECKING:
    from bot.core.jobs import Job, SlurmSpec

PLAN_SCHEMA_VERSION = 1
MAX_MATRIX_JOBS = 256  # GitHub Actions' limit of jobs per matrix


def _plain(value: Any, mode: str, exclude_none: bool) -> Any:
    if isinstance(value, Message):  # a note or a reason: JSON keeps its id and parameters (bot.core.messages)
        return value.to_data() if mode == "json" else value
    if isinstance(value, Record):
        return value.model_dump(mode=mode, exclude_none=exclude_none)
    if hasattr(value, "model_dump"):  # a pydantic model (a native Job, a SlurmSpec)
        return value.model_dump(mode=mode, exclude_none=exclude_none)
    if isinstance(value, list):
        return [_plain(v, mode, exclude_none) for v in value]
    if isinstance(value, tuple):
        items = [_plain(v, mode, exclude_none) for v in value]
        return items if mode == "json" else tuple(items)
    return value


# Values a dump hands on as they are. Dict fields (an InferenceX row, a warning) hold plain JSON data;
# pydantic dumped a copy of each, these are the plan's own (every caller only reads or encodes them).
_AS_IS = frozenset({str, int, float, bool, dict})


class Record:
    """A record with named fields (`FIELDS`, in dump order) and pydantic's dump and copy."""

    __slots__ = ()
    FIELDS: tuple[str, ...] = ()
    FLOATS: tuple[str, ...] = ()  # float fields: an int given becomes a float, as pydantic makes it
    LISTS: tuple[str, ...] = ()  # list fields: kept as a copy of what was given, as pydantic makes it

    def __init__(self, **values: Any) -> None:
        for name, default in self.DEFAULTS.items():  # type: ignore[attr-defined]
            value = values.pop(name) if name in values else (default() if callable(default) else default)
            if value is REQUIRED:
                raise TypeError(f"{type(self).__name__}: {name} is required")
            object.__setattr__(self, name, value)
        if values:
            raise TypeError(f"{type(self).__name__}: unknown field(s) {', '.join(sorted(values))}")
        for name in self.FLOATS:
            value = getattr(self, name)
            if type(value) is int:
                object.__setattr__(self, name, float(value))
        for name in self.LISTS:
            object.__setattr__(self, name, list(getattr(self, name)))

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.FIELDS = tuple(cls.DEFAULTS)  # type: ignore[attr-defined]

    def model_dump(self, mode: str = "python", exclude_none: bool = False, exclude: set[str] | None = None) -> dict:
        out = {}
        for name in self.FIELDS:
            if exclude and name in exclude:
                continue
            value = getattr(self, name)
            if value is None:
                if exclude_none:
                    continue
            elif type(value) not in _AS_IS:
                value = _plain(value, mode, exclude_none)
            out[name] = value
        return out

    def model_dump_json(self, indent: int | None = None, exclude_none: bool = False) -> str:
        separators = (",", ": ") if indent is not None else (",", ":")  # pydantic's spacing
        return json.dumps(self.model_dump(mode="json", exclude_none=exclude_none), indent=indent,
                          separators=separators, ensure_ascii=False)

    def model_copy(self, update: dict | None = None) -> Any:
        values = {name: getattr(self, name) for name in self.FIELDS}
        values.update(update or {})
        return type(self)(**values)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, n) == getattr(other, n) for n in self.FIELDS)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.FIELDS)})"


REQUIRED = object()
_SCOPES = ("lowest", "full")
_KINDS = ("all", "sweep", "e2e")
_FILTER_FLAGS = ("fail_fast", "evals_only", "all_evals", "agentx_fast", "accuracy", "pack", "search", "compare")


class PlanFilters(Record):
    """What a command narrows the plan to (`/sweep [glob ...] [--conc ...] [--scope ...]`, labels). Frozen.

    Every value a user gives is checked before it gets here (click's choices, the command grammar, the
    label table), so a wrong field or value is the calling code's mistake: a TypeError, in English only.
    """

    __slots__ = ("recipes", "cases", "conc", "scope", "kind", "canary", "fail_fast", "evals_only", "all_evals",
                 "agentx_fast", "accuracy", "pack", "search", "compare", "max_matrix_jobs")
    DEFAULTS = {
        "recipes": (),  # globs; given: chosen from the whole catalog, touched or not
        "cases": (),  # globs on E2E case names
        "conc": (),
        "scope": "full",  # lowest: the lowest concurrency of each arm
        "kind": "all",
        "canary": None,  # None: a canary when the scope is full and there are 2+ sweep jobs
        "fail_fast": False,
        "evals_only": False,  # only the accuracy gates (InferenceX's `evals-only` label)
        "all_evals": False,  # a gate on every arm (InferenceX's `all-evals` label)
        "agentx_fast": False,  # InferenceX's `agentx-fast` label: AIPERF_EXPERIMENTAL_FAST=1 for its rows
        "accuracy": True,
        "pack": True,  # False: one launch per point even where the recipe allows packing
        "search": False,  # `/sweep --search`: arms with a `search:` run it even where they list points
        "compare": False,  # `/e2e --compare`: a suite's compare: arms, side by side on one host
        "max_matrix_jobs": MAX_MATRIX_JOBS,
    }

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        for name, kind in (("recipes", str), ("cases", str), ("conc", int)):
            value = getattr(self, name)
            if not isinstance(value, (list, tuple)) or any(type(v) is not kind for v in value):
                raise TypeError(f"PlanFilters.{name}: expected a list of {kind.__name__}, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        if self.scope not in _SCOPES:
            raise TypeError(f"PlanFilters.scope: {self.scope!r} is not accepted (accepted: {', '.join(_SCOPES)})")
        if self.kind not in _KINDS:
            raise TypeError(f"PlanFilters.kind: {self.kind!r} is not accepted (accepted: {', '.join(_KINDS)})")
        for name in _FILTER_FLAGS:
            if type(getattr(self, name)) is not bool:
                raise TypeError(f"PlanFilters.{name}: expected true or false, got {getattr(self, name)!r}")
        if self.canary is not None and type(self.canary) is not bool:
            raise TypeError(f"PlanFilters.canary: expected true, false or none, got {self.canary!r}")
        jobs = self.max_matrix_jobs
        if type(jobs) is not int or not 1 <= jobs <= MAX_MATRIX_JOBS:
            raise TypeError(f"PlanFilters.max_matrix_jobs: expected 1 to {MAX_MATRIX_JOBS}, got {jobs!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"PlanFilters is frozen: use model_copy(update={{{name!r}: ...}})")

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in self.FIELDS))


class TouchedRecipe(Record):
    __slots__ = ("name", "source", "runner_label", "reasons", "fingerprint", "base_fingerprint")
    DEFAULTS = {"name": REQUIRED, "source": REQUIRED, "runner_label": REQUIRED, "reasons": REQUIRED,
                "fingerprint": None, "base_fingerprint": None}
    LISTS = ("reasons",)


class RecipePlan(Record):
    """One row of the plan table."""

    __slots__ = ("recipe", "source", "kind", "runner_label", "jobs", "points", "server_launches",
                 "packed_launches", "unpacked_launches", "gpu_hours", "fingerprint")
    DEFAULTS = {"recipe": REQUIRED, "source": REQUIRED, "kind": REQUIRED, "runner_label": REQUIRED,
                "jobs": REQUIRED, "points": REQUIRED,
                "server_launches": REQUIRED,  # what this plan starts
                "packed_launches": REQUIRED,  # with every point that may share a launch packed
                "unpacked_launches": REQUIRED,  # with one launch per point
                "gpu_hours": REQUIRED, "fingerprint": None}
    FLOATS = ("gpu_hours",)


class MatrixEntry(Record):
    __slots__ = ("job_id", "recipe", "runner_label", "job", "job_file", "row", "backend", "estimate_s",
                 "limit_s", "limit_source", "slurm")
    DEFAULTS = {"job_id": REQUIRED, "recipe": REQUIRED, "runner_label": REQUIRED,
                "job": None,  # inline, or
                "job_file": None,  # written under --jobs-dir for `recipe-bot run --job F`
                "row": None,  # an InferenceX matrix row, exactly as its generator makes it
                "backend": None,  # "local" or "slurm": how `recipe-bot run` runs it on its runner label
                "estimate_s": None,  # the plan's estimate of its wall time
                "limit_s": None,  # the limit it is held to (gpu.yml timeout or the cluster's limit)
                "limit_source": None,
                "slurm": None}  # the allocation an InferenceX row runs in (backend slurm)
    FLOATS = ("estimate_s", "limit_s")

    @classmethod
    def for_row(cls, job_id: str, recipe: str, row: dict, backend: str, estimate_s: float, limit_s: float,
                limit_source: str, slurm: SlurmSpec | None) -> MatrixEntry:
        """An InferenceX row's entry, made without the keyword checks (a plan makes one per row)."""
        entry = object.__new__(cls)
        entry.job_id, entry.recipe, entry.runner_label, entry.row = job_id, recipe, row["runner"], row
        entry.job = entry.job_file = None
        entry.backend, entry.estimate_s, entry.limit_s = backend, float(estimate_s), float(limit_s)
        entry.limit_source, entry.slurm = limit_source, slurm
        return entry

    if TYPE_CHECKING:
        job: Job | None
        slurm: SlurmSpec | None
        row: dict | None
        estimate_s: float | None
        limit_s: float | None


class Matrix(Record):
    """One GitHub Actions matrix: at most 256 entries, all for one runner label."""

    __slots__ = ("runner_label", "index", "fail_fast", "include")
    DEFAULTS = {"runner_label": REQUIRED, "index": REQUIRED, "fail_fast": REQUIRED, "include": REQUIRED}


class ChangelogSummary(Record):
    __slots__ = ("line", "config_keys", "evals_only", "all_evals", "append_only", "pr_link")
    DEFAULTS = {"line": REQUIRED, "config_keys": REQUIRED, "evals_only": REQUIRED, "all_evals": REQUIRED,
                "append_only": REQUIRED, "pr_link": REQUIRED}
    LISTS = ("config_keys",)


class InferenceXPlan(Record):
    __slots__ = ("changelog", "rows", "canary", "matrices", "launches", "packed_launches", "packing", "held",
                 "held_labels", "planner", "templates")
    DEFAULTS = {"changelog": list, "rows": dict,  # bucket → rows
                "canary": None, "matrices": list, "launches": 0,
                "packed_launches": 0,  # counting only the groups that may honestly share a launch
                # one line per server configuration of 2+ rows: whether its rows may share a launch, and why
                "packing": list,
                # rows on a runner label the PR adds, waiting for its code owner's approval (bot/plan/held.py)
                "held": list, "held_labels": list,
                # a PR that changes InferenceX's own planner (bot/plan/own_planner.py): {"files", "tools": "base" |
                # "head", "held": whether its rows wait, "note": the plan's note on it}; None for any other PR
                "planner": None,
                # benchmark template → {commit, secrets: env name → secret names}: where rows read their environment
                "templates": dict}


class Plan(Record):
    __slots__ = ("schema_version", "base", "head", "filters", "touched", "recipes", "jobs", "canary", "matrices",
                 "inferencex", "gpu_hours", "notes", "warnings")
    DEFAULTS = {"schema_version": PLAN_SCHEMA_VERSION, "base": REQUIRED, "head": REQUIRED, "filters": REQUIRED,
                "touched": list, "recipes": list,
                "jobs": list,  # every native job, the canary first when there is one
                "canary": None, "matrices": list, "inferencex": None, "gpu_hours": 0.0, "notes": list,
                # Problems the plan reads past (as InferenceX's generator does): listed, never a reason to stop it.
                "warnings": list}
    FLOATS = ("gpu_hours",)

    @property
    def server_launches(self) -> int:
        return sum(r.server_launches for r in self.recipes)

    @property
    def points(self) -> int:
        return sum(r.points for r in self.recipes)

    def summary(self) -> dict:
        return {
            "recipes": len(self.recipes),
            "jobs": sum(r.jobs for r in self.recipes),
            "points": self.points,
            "server_launches": self.server_launches,
            "packed_launches": sum(r.packed_launches for r in self.recipes),
            "unpacked_launches": sum(r.unpacked_launches for r in self.recipes),
            "gpu_hours": round(self.gpu_hours, 2),
        }


class PlanError(Exception):
    """A plan request that cannot be satisfied (unknown revision, a glob that matches nothing...).

    `message` is what it says in each language (a catalogue message; text where a lower layer gave
    text); str() is its English form."""

    def __init__(self, message: Message | str, accepted: list[str] | None = None) -> None:
        self.accepted = accepted or []
        if self.accepted:
            shown = ", ".join(self.accepted[:20])
            if len(self.accepted) > 20:
                message = msg("%(message)s (accepted: %(accepted)s, ... %(more)s more)", message=message,
                              accepted=shown, more=len(self.accepted) - 20)
            else:
                message = msg("%(message)s (accepted: %(accepted)s)", message=message, accepted=shown)
        self.message = message
        super().__init__(str(message))
