"""The inference engines behind one interface, and the registry that names them (vllm, sglang, ...).

An engine is one module of this package holding one `Engine` subclass, registered with `register`:
how its server is started (argv, parallelism flags, environment), how to tell it is up, its own
benchmark client, how its prefix cache is emptied, its version and where its executable comes from.
The planner, the recipe schema and the runner ask the registry; none of them names an engine.
The engine packages themselves (vllm, sglang) are runner-side extras: an engine module never
imports them, it runs their programs.
"""
from __future__ import annotations

import importlib
import pkgutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from bot.core.messages import Message
from bot.core.settings import Settings

DEFAULT = "vllm"  # the engine a job with no server reports (a harness suite), as before engines had a registry
_FIRST = ("vllm", "sglang")  # the order error messages list the engines in


@dataclass(frozen=True)
class Parallelism:
    """An arm's parallelism, which each engine spells with its own flags."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    dp_attn: bool = False


@dataclass(frozen=True)
class Target:
    """The server a benchmark client talks to."""

    host: str
    port: int
    served_model_name: str
    tokenizer: str
    engine: str

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


class BenchPoint(Protocol):
    """What a client needs of one load point (bot.core.jobs.LoadPoint)."""

    point_id: str
    concurrency: int
    dataset: str
    isl: int | None
    osl: int | None
    trace: str | None
    num_prompts: int
    num_warmups: int
    random_range_ratio: float
    extra_args: list[str]


class Engine:
    """One engine. A subclass sets the names and implements `locate`, `server_argv`,
    `parallel_args`, `client_command` and `client_args`; the rest has defaults that fit both."""

    name: str  # as recipes and job files write it
    title: str  # as people write it: "vLLM"
    client: str  # its benchmark client, as results name it: "vllm bench serve"
    ready_paths: tuple[str, ...] = ("/health", "/v1/models")  # all answer 200: the server is up
    cache_reset_path: str | None = None  # POST here empties the prefix cache
    framework_token: str = ""  # an InferenceX row whose framework contains it runs on this engine
    missing_server: Message | str | None = None  # why a server cannot start when `locate` found nothing
    missing_client: Message | str | None = None  # the same for its benchmark client
    # True: its client's library can run every point of a case in one process (bot/runner/inprocess.py).
    in_process_client: bool = False
    session_python_env: str | None = None  # the variable naming that process's Python
    # Its client's raw result names for figures that vLLM's client names otherwise ({"e2el": "e2e_latency"}):
    # the runner reads a point's figures under the names of the client that wrote them (bot/runner/metrics.py).
    result_names: Mapping[str, str] = MappingProxyType({})
    provenance_env: str | None = None  # the variable naming its program, kept in a result's provenance

    def locate(self, repo: Path, env: Mapping[str, str], settings: Settings) -> str | None:
        """The program the engine's commands start with, or None where it is not installed (env: for
        PATH; settings: the RECIPE_BOT_* values the command read at its start)."""
        raise NotImplementedError

    def server_argv(self, program: str, *, model: str, served: str, host: str, port: int,
                    args: Sequence[str]) -> list[str]:
        raise NotImplementedError

    def parallel_args(self, parallelism: Parallelism) -> list[str]:
        raise NotImplementedError

    def server_env(self, *, reset_prefix_cache: bool) -> dict[str, str]:
        """Variables the server needs unless the case sets (or unsets) them itself."""
        return {}

    def client_command(self, program: str) -> list[str]:
        """The benchmark client's command, before its arguments."""
        raise NotImplementedError

    def client_args(self, point: BenchPoint, target: Target, result_file: Path,
                    seed: int = 0) -> list[str]:
        raise NotImplementedError

    def client_argv(self, program: str, point: BenchPoint, target: Target, result_file: Path,
                    seed: int = 0) -> list[str]:
        return [*self.client_command(program), *self.client_args(point, target, result_file, seed)]

    def session_python(self, program: str, settings: Settings) -> str | None:
        """The Python that can run the client's library for a whole case; None: no such client."""
        return None

    def version(self, program: str) -> str | None:
        """The installed engine's version, or None where it cannot tell."""
        return None

    def serves_framework(self, framework: str) -> bool:
        return bool(self.framework_token) and self.framework_token in framework


_ENGINES: dict[str, Engine] = {}


def register(engine: Engine) -> Engine:
    """Make an engine known by its name (an engine module calls it once, at import)."""
    _ENGINES[engine.name] = engine
    return engine


def unregister(name: str) -> None:
    _ENGINES.pop(name, None)


def names() -> tuple[str, ...]:
    return tuple(_ENGINES)


def accepted() -> str:
    """The engines' names as an error lists them: "vllm or sglang"."""
    return " or ".join(names())


def get(name: str) -> Engine:
    try:
        return _ENGINES[name]
    except KeyError:
        raise KeyError(f"unknown engine {name!r}: expected {accepted()}") from None


def for_framework(framework: str) -> Engine:
    """The engine an InferenceX row's framework (`sglang-disagg`, `vllm`) runs on; the default else."""
    return next((e for e in _ENGINES.values() if e.serves_framework(framework)), get(DEFAULT))


class EngineName(str):
    """A field holding a registered engine's name: checked against the registry when validated
    (so an engine registered later is accepted), refused with pydantic's own literal error."""

    @classmethod
    def accepted_values(cls) -> tuple[str, ...]:
        return names()

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import PydanticCustomError, core_schema

        def known(value: str) -> str:
            if value not in _ENGINES:
                raise PydanticCustomError("literal_error", "Input should be {expected}",
                                          {"expected": " or ".join(repr(n) for n in names())})
            return value

        return core_schema.no_info_after_validator_function(known, core_schema.str_schema())


@dataclass(frozen=True)
class Installed:
    """One engine as this host has it: the engine and its program (None: not installed here)."""

    engine: Engine
    program: str | None

    def version(self) -> str | None:
        return self.engine.version(self.program) if self.program else None


def installed(repo: Path, env: Mapping[str, str], settings: Settings) -> dict[str, Installed]:
    """Every registered engine with where its program is on this host, found once for a job."""
    return {name: Installed(engine, engine.locate(repo, env, settings)) for name, engine in _ENGINES.items()}


def engine_dir(repo: Path, settings: Settings) -> Path:
    """Where the project's own engines live (scripts/setup-cpu-engine.sh): RECIPE_BOT_ENGINE_DIR."""
    return settings.ENGINE_DIR or repo / ".engine"


METADATA_VERSION = "import importlib.metadata as m; print(m.version({!r}))"


def run_for_line(argv: list[str], timeout_s: float) -> str | None:
    """The last non-empty line a short command prints, or None when it fails."""
    try:
        out = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=timeout_s, check=False, cwd="/")
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    return lines[-1] if out.returncode == 0 and lines else None


def script_interpreter(program: str) -> str | None:
    """The Python of a console script (its #! line), when it is one."""
    try:
        with open(program, "rb") as handle:
            first = handle.readline(512).decode(errors="replace").strip()
    except OSError:
        return None
    if first.startswith("#!") and "python" in first and " " not in first[2:].strip():
        return first[2:].strip()
    return None


def _load_engine_modules() -> None:
    """Import every engine module of this package, so that each registers itself."""
    found = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    for name in [*(n for n in _FIRST if n in found), *(n for n in found if n not in _FIRST)]:
        importlib.import_module(f"{__name__}.{name}")


_load_engine_modules()
