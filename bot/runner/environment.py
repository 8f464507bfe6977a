"""The runner's view of its environment: ${VAR} expansion, opt-in variables, visible devices."""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from bot.core.messages import Message, msg, plural
from bot.core.results import joined, listed

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class EnvironmentProblem(ValueError):
    """A case cannot start because of its environment; the message says which variable and why.
    str() is its English form; the message itself is in `args[0]` (bot.core.results.reason_of)."""

    def __init__(self, message: Message | str) -> None:
        super().__init__(message)

    def __str__(self) -> str:
        return str(self.args[0])


def expand(text: str, env: Mapping[str, str], where: str) -> str:
    """Replace every ${VAR} from `env`; an unset variable is an error naming the field."""
    missing = [name for name in _VAR.findall(text) if name not in env]
    if missing:
        raise EnvironmentProblem(msg("%(where)s refers to ${%(name)s}, which is not set in the runner's environment",
                                     where=where, name=missing[0]))
    return _VAR.sub(lambda m: env[m.group(1)], text)


def check_required(required: list[str], env: Mapping[str, str]) -> None:
    """Opt-in variables (afd-plugin rule): a missing or empty one fails the case, never skips it.

    An entry is NAME (set and not empty) or NAME=VALUE (set to exactly VALUE, e.g. AFD_E2E_BACKEND=gpu).
    """
    missing = [entry for entry in required if "=" not in entry and not env.get(entry)]
    wrong = []
    for entry in required:
        if "=" in entry:
            name, wanted = entry.split("=", 1)
            if env.get(name) != wanted:
                wrong.append(msg("%(name)s=%(wanted)s (found unset)", name=name, wanted=wanted) if name not in env
                             else msg("%(name)s=%(wanted)s (found %(value)s)", name=name, wanted=wanted,
                                      value=repr(env[name])))
    problems: list[Message] = []
    if missing:
        problems.append(plural("required environment variable %(names)s not set",
                               "required environment variables %(names)s not set", len(missing),
                               names=", ".join(missing)))
    if wrong:
        problems.append(plural("required setting %(settings)s not met", "required settings %(settings)s not met",
                               len(wrong), settings=listed(wrong)))
    if problems:
        raise EnvironmentProblem(msg("%(problems)s: this case is opt-in and fails rather than skips without them",
                                     problems=joined(problems)))


def _ordered(devices: list[int], env: Mapping[str, str], order_var: str | None) -> list[int]:
    """Positions into the list an opt-in variable gives (AFD_E2E_DEVICES=0,2,4,6,1,3,5,7), when it is set."""
    value = env.get(order_var, "").strip() if order_var else ""
    if not value:
        return devices
    parts = [p.strip() for p in value.split(",")]
    if not all(p.isdigit() for p in parts):
        raise EnvironmentProblem(msg("%(name)s=%(value)s is not a comma-separated list of GPU indices",
                                     name=order_var, value=repr(value)))
    order = [int(p) for p in parts]
    outside = [d for d in devices if not 0 <= d < len(order)]
    if outside:
        raise EnvironmentProblem(msg("devices %(devices)s are outside the %(count)s GPU(s) that %(name)s=%(value)s "
                                     "lists; devices index into that list", devices=str(outside), count=len(order),
                                     name=order_var, value=value))
    return [order[d] for d in devices]


def visible_devices(devices: list[int], env: Mapping[str, str], order_var: str | None = None) -> str:
    """CUDA_VISIBLE_DEVICES for a server: its `devices` index into what the runner was given.

    A Slurm allocation (or an operator) may hand the runner CUDA_VISIBLE_DEVICES=4,5; a recipe's
    devices [0, 1] then mean the allocation's first two GPUs, never the node's GPUs 0 and 1.
    With `order_var` (a suite's devices_env), devices are first positions into that variable's list.
    """
    devices = _ordered(devices, env, order_var)
    inherited = [d.strip() for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if not inherited:
        return ",".join(str(d) for d in devices)
    outside = [d for d in devices if not 0 <= d < len(inherited)]
    if outside:
        raise EnvironmentProblem(msg(
            "devices %(devices)s are outside the %(count)s GPU(s) this runner was given (CUDA_VISIBLE_DEVICES="
            "%(visible)s); devices index into that list", devices=str(outside), count=len(inherited),
            visible=",".join(inherited)))
    return ",".join(inherited[d] for d in devices)


def check_opt_in(opt_in: Mapping | None, env: Mapping[str, str]) -> None:
    """The opt-in checks afd-plugin's harness makes (`_prepare_e2e_assets`, `validate_topology`), made
    before anything starts: the model directory exists, the device list has exactly the count, each
    device once, and the roles' devices do not overlap."""
    if not opt_in:
        return
    model_var = opt_in.get("model_dir_env")
    if model_var:
        value = env.get(model_var, "")
        if not value or not Path(value).expanduser().is_dir():
            raise EnvironmentProblem(msg("%(name)s must be an existing directory (got %(value)s)", name=model_var,
                                         value=repr(value or "unset")))
    devices_var = opt_in.get("devices_env")
    if not devices_var:
        return
    value = env.get(devices_var, "").strip()
    parts = [p.strip() for p in value.split(",")] if value else []
    if not parts or not all(p.isdigit() for p in parts):
        raise EnvironmentProblem(msg("%(name)s=%(value)s is not a comma-separated list of device ids",
                                     name=devices_var, value=repr(value)))
    count = opt_in.get("device_count")
    if count and len(parts) != count:
        raise EnvironmentProblem(msg("%(name)s must contain exactly %(count)s device ids (got %(got)s: %(value)s)",
                                     name=devices_var, count=count, got=len(parts), value=value))
    repeated = sorted({p for p in parts if parts.count(p) > 1}, key=int)
    if repeated:
        raise EnvironmentProblem(msg("%(name)s must list each device once (%(repeated)s repeated: %(value)s)",
                                     name=devices_var, repeated=", ".join(repeated), value=value))
    seen: dict[str, str] = {}
    for role, positions in (opt_in.get("roles") or {}).items():
        for position in positions:
            if position >= len(parts):
                raise EnvironmentProblem(msg("role %(role)s takes position %(position)s of %(name)s, which lists "
                                             "%(count)s device(s)", role=role, position=position, name=devices_var,
                                             count=len(parts)))
            device = parts[position]
            if device in seen and seen[device] != role:
                raise EnvironmentProblem(msg("%(name)s: device %(device)s is given to both %(first)s and %(second)s; "
                                             "roles must use disjoint devices", name=devices_var, device=device,
                                             first=seen[device], second=role))
            seen[device] = role
