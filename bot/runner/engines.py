"""From a ServerSpec to a command line and environment: its engine's (bot.engines), or the recipe's own script."""
from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bot import engines
from bot.engines import Engine, Installed
from bot.core.jobs import Case, ServerSpec
from bot.core.messages import msg
from bot.runner import procs
from bot.runner.environment import EnvironmentProblem, expand, visible_devices

HOST = "127.0.0.1"


@dataclass(frozen=True)
class Launch:
    """Everything needed to start one server and to point clients at it."""

    name: str
    engine: str
    argv: list[str]
    env: dict[str, str]
    port: int
    model: str  # expanded: a local path or a hub id; also the clients' tokenizer
    served_model_name: str
    cwd: Path | None = None
    ready_paths: tuple[str, ...] = Engine.ready_paths  # its engine's: all answer 200 when it is up


def engine_command(installed: Installed, model: str, served: str, port: int,
                   args: list[str]) -> list[str]:
    engine = installed.engine
    if installed.program is None:
        raise EnvironmentProblem(engine.missing_server or msg("no %(engine)s found on this runner",
                                                              engine=engine.title))
    return engine.server_argv(installed.program, model=model, served=served, host=HOST, port=port,
                              args=args)


def script_command(script: str, repo: Path, args: list[str]) -> tuple[list[str], Path]:
    """A recipe's own launch script, which must live inside the repository."""
    path = (repo / script).resolve()
    if not path.is_relative_to(repo.resolve()):
        raise EnvironmentProblem(msg("launch_script %(script)s points outside the repository %(repo)s",
                                     script=repr(script), repo=str(repo)))
    if not path.is_file():
        raise EnvironmentProblem(msg("launch_script %(script)s does not exist under %(repo)s", script=repr(script),
                                     repo=str(repo)))
    argv = [str(path)] if os.access(path, os.X_OK) else ["bash", str(path)]
    return [*argv, *args], repo


def server_env(spec: ServerSpec, case: Case, runner_env: Mapping[str, str], *, run_tag: str,
               reset_prefix_cache: bool) -> dict[str, str]:
    env = {k: v for k, v in runner_env.items() if k not in set(case.unset_env)}
    env["PYTHONUNBUFFERED"] = "1"
    # What the engine needs (vLLM's dev mode for its cache reset), unless the case unsets it.
    for key, value in engines.get(spec.engine).server_env(reset_prefix_cache=reset_prefix_cache).items():
        if key not in case.unset_env:
            env.setdefault(key, value)
    for key, value in spec.env.items():
        env[key] = expand(value, runner_env, f"servers[{spec.name}].env.{key}")
    if spec.devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible_devices(spec.devices, runner_env, case.devices_env)
    env[procs.RUN_TAG_VAR] = run_tag
    return env


def build_launch(spec: ServerSpec, case: Case, *, port: int, repo: Path,
                 runner_env: Mapping[str, str], run_tag: str,
                 installed: Mapping[str, Installed]) -> Launch:
    where = f"case {case.name!r}, server {spec.name!r}"
    model = expand(spec.model, runner_env, f"{where}: model")
    args = [expand(arg, runner_env, f"{where}: args") for arg in spec.args]
    served = spec.served_model_name or model
    reset = case.reset_prefix_cache_between_points and len(case.points) > 1
    env = server_env(spec, case, runner_env, run_tag=run_tag, reset_prefix_cache=reset)
    cwd = None
    if spec.launch_script:
        argv, cwd = script_command(spec.launch_script, repo, args)
        env.update({"PORT": str(port), "HOST": HOST, "MODEL": model, "SERVED_MODEL_NAME": served,
                    "SERVER_ARGS": shlex.join(args), "ENGINE": spec.engine})
    else:
        argv = engine_command(installed[spec.engine], model, served, port, args)
    return Launch(name=spec.name, engine=spec.engine, argv=argv, env=env, port=port, model=model,
                  served_model_name=served, cwd=cwd, ready_paths=installed[spec.engine].engine.ready_paths)
