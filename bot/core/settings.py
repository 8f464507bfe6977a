"""Every RECIPE_BOT_* environment variable in one typed settings model: names, types, defaults, descriptions."""
from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field, SecretStr, ValidationError, create_model
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.core.messages import Message, msg

PREFIX = "RECIPE_BOT_"

_SWITCH = msg("1/0, true/false, yes/no or on/off")
_PATH = msg("a path")
_TEXT = msg("any text")


def _setting(default: Any, description: str, accepts: Message, **constraints: Any) -> Any:
    # the catalogue message rides on the field, for the refusal and for docs/settings.md
    return Field(default, description=description, **constraints, json_schema_extra={"accepts": accepts.id})


Seconds = Annotated[float, Field(ge=0)]


class Settings(BaseSettings):
    """What the environment may set, read once at an edge (a command, a runner) and passed down."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, env_ignore_empty=True, case_sensitive=True,
                                      extra="ignore", frozen=True)

    # -- the command line and the control plane
    DEBUG: bool = _setting(False, "Let an unexpected error end in its traceback instead of one bilingual line.",
                           _SWITCH)
    TEMPLATE_CACHE: bool = _setting(True, "Keep compiled message templates between runs (0: compile each time).",
                                    _SWITCH)
    CHECKOUT: Path | None = _setting(None, "`handle --checkout`: a checkout of the default branch to read the "
                                           "config and the head commit's recipes from.", _PATH)
    # the GitHub retry policy holds each of these to its bounds (bot/core/github_retry.py): no value is refused
    GITHUB_ATTEMPTS: int = _setting(4, "Attempts per GitHub request, 1 to 10 (retries of a transient failure).",
                                    msg("a whole number"))
    GITHUB_RETRY_BUDGET_S: float = _setting(60.0, "Seconds of waiting between retries, in all, per request (at most "
                                                  "60).", msg("a number of seconds"))
    GITHUB_BACKOFF_S: float = _setting(1.0, "The first retry's back-off ceiling; it doubles per retry.",
                                       msg("a number of seconds"))
    GITHUB_TIMEOUT_S: int = _setting(30, "Seconds per GitHub request before it counts as timed out (at least 1).",
                                     msg("a whole number of seconds"))
    # -- `recipe-bot serve` (the defaults of --secret-env, --app-id-env, --private-key-env)
    WEBHOOK_SECRET: SecretStr | None = _setting(None, "The GitHub App's webhook secret (never printed).", _TEXT)
    APP_ID: str | None = _setting(None, "The GitHub App's numeric id.", msg("digits"), pattern=r"^\d+$")
    APP_PRIVATE_KEY_PATH: Path | None = _setting(None, "The GitHub App's private key (.pem).", _PATH)
    # -- the runner
    RUNNER_EPHEMERAL: str | None = _setting(None, "`1`: this self-hosted runner is ephemeral, so it may run pull "
                                                  "request code (any other value: it is not).", msg("exactly 1"))
    SHUTDOWN_GRACE_S: Seconds = _setting(30.0, "SIGTERM grace before SIGKILL when a server stops (at least 0.5 s).",
                                         msg("a number of seconds, 0 or more"))
    IDLE_GPU_MIB: float = _setting(1024.0, "Memory an idle GPU may show before a case starts on it.",
                                   msg("a number of MiB from 0 to 1048576"),
                                   ge=0, le=2**20)
    INPROCESS_CLIENT: bool = _setting(True, "vLLM's client in one process per case (0: one process per point).",
                                      _SWITCH)
    VLLM: str | None = _setting(None, "The `vllm` executable (else `vllm` on PATH, else the CPU engine).", _PATH)
    VLLM_PYTHON: str | None = _setting(None, "The Python that has vLLM, when not the one beside `vllm`.", _PATH)
    SGLANG_PYTHON: str | None = _setting(None, "The Python that has SGLang (else this one, else python3).", _PATH)
    ENGINE_DIR: Path | None = _setting(None, "Where scripts/setup-cpu-engine.sh put the CPU engine (default "
                                             "REPO/.engine).", _PATH)
    TINY_MODEL: str | None = _setting(None, "The tiny model that `${RECIPE_BOT_TINY_MODEL}` in a recipe names.",
                                      _PATH)
    GSM8K_DIR: Path | None = _setting(None, "A folder with GSM8K's test.jsonl (and train.jsonl), instead of the "
                                            "Hugging Face hub.", _PATH)
    CLIENT_PAUSE_S: Seconds = _setting(0.0, "bench: wait this long before each point of the in-process client "
                                            "(read by the driver in the engine's Python).",
                                       msg("a number of seconds, 0 or more"))
    CLIENT_FORK: bool = _setting(False, "bench: run each point of the in-process client in a forked child "
                                        "(read by the driver in the engine's Python).", _SWITCH)
    SLURM_POLL_S: float | None = _setting(None, "Seconds between two looks at a Slurm job (default 2).",
                                          msg("a number of seconds above 0"), gt=0)
    SLURM_PENDING_TIMEOUT_S: float | None = _setting(None, "Give a Slurm job up after pending this long "
                                                           "(default: as long as the queue takes).",
                                                     msg("a number of seconds above 0"), gt=0)
    SLURM_UNAVAILABLE_S: float | None = _setting(None, "Give a multi-node row up once a job of its launcher has "
                                                       "waited this long for nodes that are down or drained "
                                                       "(default 120).", msg("a number of seconds above 0"), gt=0)
    CONTAINER_PYTHON: str = _setting("python3", "The Python inside a Slurm job's container.", _PATH)
    CONTAINER_MOUNTS: str = _setting("", "Extra container mounts of a Slurm job (SRC:DST[,SRC:DST...]).", _TEXT)
    # -- the demo and the tests
    UPSTREAM_DIR: Path | None = _setting(None, "Where scripts/setup-upstream.sh put GitHub's OpenAPI description, "
                                               "octokit's examples and mermaid (default REPO/.upstream).", _PATH)


@functools.cache
def _values_model() -> type[BaseModel]:
    fields = {name: (field.annotation, field) for name, field in Settings.model_fields.items()}
    return create_model("SettingsValues", __config__=None, **fields)


class SettingsError(ValueError):
    """A RECIPE_BOT_* variable with a value its setting does not accept; str() is English, then 简体中文."""

    def __init__(self, message: Message) -> None:
        self.message = message
        super().__init__(f"{message.render('en')}\n{message.render('zh')}")


def accepts(field: str) -> Message:
    return Message(Settings.model_fields[field].json_schema_extra["accepts"])  # type: ignore[index]


def variable(field: str) -> str:
    return PREFIX + field


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings of `environ` (default: this process's environment); a bad value raises SettingsError."""
    env = os.environ if environ is None else environ
    return _checked({name: env[variable(name)] for name in Settings.model_fields
                     if env.get(variable(name), "") != ""}, {})


def _checked(values: dict[str, str], names: dict[str, str]) -> Settings:
    try:
        # the fields' own validation over exactly the mapping given: BaseSettings itself would also read
        # this process's environment, so a plain model with the same fields checks the values
        checked = _values_model().model_validate(values)
        return Settings.model_construct(**dict(checked))
    except ValidationError as exc:
        field = str(exc.errors()[0]["loc"][0])
        # a secret's value is never echoed, not even a bad one
        shown = "***" if Settings.model_fields[field].annotation == SecretStr | None else repr(values[field])
        raise SettingsError(msg("%(name)s=%(value)s is not accepted: expected %(accepted)s",
                                name=names.get(field, variable(field)), value=shown,
                                accepted=accepts(field))) from None


def setting(field: str, environ: Mapping[str, str] | None = None) -> Any:
    """One setting of `environ`, checked on its own (a bad value elsewhere does not stop this reader)."""
    env = os.environ if environ is None else environ
    raw = env.get(variable(field), "")
    return getattr(load_settings({variable(field): raw} if raw != "" else {}), field)


def setting_named(field: str, name: str, environ: Mapping[str, str] | None = None) -> Any:
    """One setting read from the variable `name` (serve's --secret-env and kin rename its variable); a bad
    value raises SettingsError naming `name`."""
    env = os.environ if environ is None else environ
    raw = env.get(name, "")
    return getattr(_checked({field: raw} if raw != "" else {}, {field: name}), field)


def settings_table() -> str:
    """docs/settings.md: one row per variable, from the model (tests/test_settings.py keeps it current)."""
    rows = ["| variable | default | accepts | what it sets |", "|---|---|---|---|"]
    for name, field in Settings.model_fields.items():
        shown = str(field.default).lower() if isinstance(field.default, bool) else field.default
        default = "" if field.default in (None, "") else f"`{shown}`"
        rows.append(f"| `{variable(name)}` | {default} | {accepts(name).render('en')} | {field.description} |")
    return ("# Environment variables\n\n"
            "<!-- Generated from bot/core/settings.py by `recipe-bot ci settings-doc > docs/settings.md`; "
            "tests/test_settings.py checks it is current. -->\n\n"
            "Every `RECIPE_BOT_*` variable recipe-bot reads. An empty value counts as unset; a value the "
            "setting does not accept stops the command with one line naming the variable and what it accepts.\n\n"
            + "\n".join(rows) + "\n")
