"""A row's environment read from the repository's own benchmark template: its env blocks, evaluated.

InferenceX's `.github/workflows/benchmark-tmpl.yml` (and the multi-node one) is a reusable workflow;
the row's fields are its inputs. The launch step's process sees the workflow's `env:`, the job's and
the step's, then what the step's `run:` script exports before it calls `runners/launch_<fleet>.sh`.
This module evaluates the three env blocks with bot.inferencex.expr and reads the script's leading
lines with a small, closed shell reader (assignments, `$((...))` of names and integers, parameter
expansions, `if [ -n/-z ]`): nothing of the template is ever executed. A script line it does not
know that may set a variable is kept in `unread`, for the plan to show.

Secrets the blocks name (`${{ secrets.X }}`) are listed, not resolved, unless the caller hands their
values over (the runner, from its own environment at run time); the values are never written anywhere.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from bot.core.messages import msg
from bot.inferencex import expr
from bot.recipes.errors import RecipeError
from bot.recipes.yamlsrc import Located, load_yaml

SINGLE_NODE = ".github/workflows/benchmark-tmpl.yml"
MULTI_NODE = ".github/workflows/benchmark-multinode-tmpl.yml"
TEMPLATES = (SINGLE_NODE, MULTI_NODE)
_LAUNCH = re.compile(r"runners/launch_")
_SECRET = re.compile(r"\bsecrets\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)|\bsecrets\s*\[\s*'([^']+)'\s*\]")


@dataclass(frozen=True)
class EnvEntry:
    name: str
    value: str  # as written (with its `${{ }}` parts)
    line: int | None


@dataclass(frozen=True)
class Template:
    """The parts of a benchmark template that make a row's environment."""

    file: str
    inputs: dict[str, dict]  # name → {type, default}
    blocks: tuple[tuple[str, tuple[EnvEntry, ...]], ...]  # (workflow|job|step, entries), in order
    script: tuple[tuple[int | None, str], ...]  # the launch step's run: lines before the launcher call
    script_line: int | None
    launch_line: str  # the script's line that calls the fleet launcher

    @property
    def secrets(self) -> dict[str, list[str]]:
        """Env name → the secrets its value names (the plan lists them; the runner supplies them)."""
        found: dict[str, list[str]] = {}
        for _, entries in self.blocks:
            for entry in entries:
                names = [a or b for a, b in _SECRET.findall(entry.value)]
                if names:
                    found[entry.name] = names
        return found


@dataclass
class RowEnv:
    env: dict[str, str]
    secret_keys: dict[str, list[str]] = field(default_factory=dict)  # env names whose value is a secret's
    computed: list[str] = field(default_factory=list)  # names the run script set (the shell reader's)
    unread: list[str] = field(default_factory=list)  # run-script lines that may set a variable, not read

    def without_secrets(self) -> dict[str, str]:
        """The environment to write into a result file: every secret-carrying value left out."""
        return {k: v for k, v in self.env.items() if k not in self.secret_keys}


def _error(file: str, line: int | None, expression: str, what: str) -> RecipeError:
    return RecipeError.single(file, line, None, msg(
        "the expression ${{ %(expression)s }} uses %(what)s, which recipe-bot cannot evaluate (it evaluates "
        "inputs, env, secrets, github, runner and vars, literals, ! == != < > && || and the functions "
        "%(functions)s)", expression=expression, what=what, functions=", ".join(expr.FUNCTIONS)))


def load(text: str | bytes, file: str) -> Template:
    """The template's inputs, env blocks and launch step; a file of another shape is one RecipeError."""
    located = load_yaml(text, file, duplicates=[])
    data = located.data
    if not isinstance(data, dict):
        raise RecipeError.single(file, None, None, msg("a workflow file is a mapping (name, on, env, jobs)"))
    trigger = data.get("on", data.get(True)) or {}
    call = trigger.get("workflow_call") if isinstance(trigger, dict) else None
    inputs = {str(k): v or {} for k, v in ((call or {}).get("inputs") or {}).items()}
    jobs = data.get("jobs") or {}
    for job_name, job in jobs.items() if isinstance(jobs, dict) else []:
        for index, step in enumerate((job or {}).get("steps") or []):
            run = step.get("run") if isinstance(step, dict) else None
            if isinstance(run, str) and _LAUNCH.search(run):
                return _template(located, inputs, str(job_name), job, index, step)
    raise RecipeError.single(file, None, "jobs", msg(
        "no step of this workflow runs a fleet launcher (runners/launch_<fleet>.sh), so recipe-bot cannot "
        "tell which step's environment a row runs in"))


def _entries(located: Located, loc: tuple, block: Any) -> tuple[EnvEntry, ...]:
    if not isinstance(block, dict):
        return ()
    return tuple(EnvEntry(str(k), expr.to_text(v) if not isinstance(v, str) else v, located.line_of((*loc, k)))
                 for k, v in block.items())


def _template(located: Located, inputs: dict, job_name: str, job: dict, index: int, step: dict) -> Template:
    step_loc = ("jobs", job_name, "steps", index)
    run_line = located.line_of((*step_loc, "run"))
    lines = step["run"].splitlines()
    before: list[tuple[int | None, str]] = []
    launch = ""
    for n, line in enumerate(lines):
        if _LAUNCH.search(line):
            launch = line.strip()
            break
        before.append(((run_line + 1 + n) if run_line else None, line))
    blocks = (("workflow", _entries(located, ("env",), located.data.get("env"))),
              ("job", _entries(located, ("jobs", job_name, "env"), job.get("env"))),
              ("step", _entries(located, (*step_loc, "env"), step.get("env"))))
    return Template(located.file, inputs, blocks, tuple(before), run_line, launch)


def _typed(declared: dict, given: object) -> Any:
    """An input's value as the called workflow sees it: booleans and numbers typed, a default when not given."""
    kind = declared.get("type", "string")
    value = given if given is not None else declared.get("default")
    if kind == "boolean":
        if isinstance(value, str):
            return value.strip().lower() == "true"
        return bool(value)
    if kind == "number":
        try:
            return float(value) if value not in (None, "") else 0.0
        except (TypeError, ValueError):
            return 0.0
    return "" if value is None else expr.to_text(value)


def row_env(template: Template, given: Mapping[str, object], *, runner_name: str,
            secrets: Mapping[str, str] | None = None, github: Mapping[str, object] | None = None,
            variables: Mapping[str, str] | None = None) -> RowEnv:
    """The launch step's environment for one row's inputs (`given`, as the sweep workflow passes them)."""
    # only the inputs the template declares reach it (GitHub refuses a call with others)
    inputs = {name: _typed(decl, given.get(name)) for name, decl in template.inputs.items()}
    env: dict[str, str] = {}
    secret_keys: dict[str, list[str]] = {}
    named = template.secrets
    contexts: dict[str, Any] = {"inputs": inputs, "secrets": dict(secrets or {}), "github": dict(github or {}),
                                "vars": dict(variables or {}), "runner": {"name": runner_name, "os": "Linux"},
                                "env": env}
    for level, entries in template.blocks:
        allowed = ("inputs", "secrets", "github", "vars") + (("env", "runner") if level == "step" else ())
        for entry in entries:
            def lookup(name: str, _allowed: tuple = allowed, _entry: EnvEntry = entry) -> Any:
                if name not in _allowed:
                    raise expr.ExpressionError(_entry.value, msg(
                        "the context %(name)s, which a %(level)s env block does not have", name=name, level=level))
                return contexts[name]
            try:
                env[entry.name] = expr.to_text(expr.interpolate(entry.value, lookup))
            except expr.ExpressionError as exc:
                raise _error(template.file, entry.line, exc.expression, exc.what) from None
            if entry.name in named:
                secret_keys[entry.name] = named[entry.name]
    result = RowEnv(env, secret_keys)
    _read_script(template, contexts, result)
    return result


# --- the run script's leading lines -----------------------------------------------------------------

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_ASSIGN = re.compile(rf"^(?:export\s+)?({_NAME})=(.*)$")
_IF = re.compile(r'^if \[\s+(-[nz])\s+"?\$\{?(' + _NAME + r')\}?"?\s+\];\s*then$')
_GITHUB_ENV = re.compile(r'>>\s*"?\$\{?GITHUB_ENV\}?"?\s*$')
_QUIET = re.compile(r"^(#.*|set\s+-[a-z]+|echo\s[^>]*|)$")
_EXPANSION = re.compile(rf"\$\(\((.*?)\)\)|\$\{{({_NAME})(?::(\d+)(?::(\d+))?)?\}}|\$({_NAME})")
_ARITH_TOKEN = re.compile(rf"\s*(?:(\d+)|({_NAME})|([-+*/()]))")


def _read_script(template: Template, contexts: dict, result: RowEnv) -> None:
    """Apply the script lines before the launcher call that the reader knows; note the others."""
    env = result.env

    def lookup(name: str) -> Any:
        if name not in contexts:
            raise expr.ExpressionError(name, msg("the context %(name)s", name=name))
        return contexts[name]

    skipping: list[bool] = []
    for line_no, raw in template.script:
        try:
            line = expr.interpolate(raw, lookup) if "${{" in raw else raw
        except expr.ExpressionError as exc:
            raise _error(template.file, line_no, exc.expression, exc.what) from None
        line = expr.to_text(line).strip()
        match = _IF.match(line)
        if match:
            value = env.get(match.group(2), "")
            skipping.append((value == "") if match.group(1) == "-n" else (value != ""))
            continue
        if line == "fi" and skipping:
            skipping.pop()
            continue
        if line == "else" and skipping:
            skipping[-1] = not skipping[-1]
            continue
        if any(skipping) or _QUIET.match(line) or _GITHUB_ENV.search(line) and line.startswith("echo"):
            continue
        words = line.split()
        if words[0] == "export" and all(_ASSIGN.match(w) or re.fullmatch(_NAME, w) for w in words[1:]) \
                and not any('"' in w or "$" in w for w in words[1:]):
            for word in words[1:]:  # `export A=1 B=2` as the multi-node template's additional settings
                assigned = _ASSIGN.match(word)
                if assigned:
                    env[assigned.group(1)] = assigned.group(2)
                    result.computed.append(assigned.group(1))
            continue
        assigned = _ASSIGN.match(line)
        value = _word(assigned.group(2), env) if assigned else None
        if assigned and value is not None:
            env[assigned.group(1)] = value
            result.computed.append(assigned.group(1))
            continue
        result.unread.append(f"{template.file}:{line_no}: {line}")


def _word(text: str, env: Mapping[str, str]) -> str | None:
    """One shell word of quotes, names, `${X:0:16}` and `$((A * B))`; None for anything else."""
    text = text.strip()
    if text.startswith('"') and text.endswith('"') and text.count('"') == 2:
        text = text[1:-1]
    elif any(c in re.sub(r"\$\(\(.*?\)\)", "", text) for c in "\"'`\\ ;|&<>"):
        return None
    if "$(" in text.replace("$((", ""):
        return None

    def expand(match: re.Match) -> str:
        arith, name, offset, length, bare = match.groups()
        if arith is not None:
            return str(_arithmetic(arith, env))
        value = env.get(name or bare, "")
        if offset is not None:
            start = int(offset)
            value = value[start:start + int(length)] if length is not None else value[start:]
        return value
    try:
        return _EXPANSION.sub(expand, text)
    except ValueError:
        return None


def _arithmetic(text: str, env: Mapping[str, str]) -> int:
    """`TP * PP_SIZE * PCP_SIZE` and the like: integers, names, + - * / and parentheses only."""
    out, pos = [], 0
    while pos < len(text.rstrip()):
        match = _ARITH_TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(text)
        number, name, op = match.groups()
        if name:
            value = env.get(name, "").strip() or "0"
            if not re.fullmatch(r"-?\d+", value):
                raise ValueError(name)
            out.append(value)
        else:
            out.append(number or ("//" if op == "/" else op))
        pos = match.end()
    return _integer(ast.parse(" ".join(out), mode="eval").body)


def _integer(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_integer(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_integer(node.left), _integer(node.right))
    raise ValueError(type(node).__name__)  # not integer arithmetic: the line is listed, not evaluated


_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.FloorDiv: lambda a, b: int(a / b) if b else 0}
