"""Workflow files as GitHub reads them at dispatch: the workflow_dispatch trigger, its inputs, and `run-name`."""
from __future__ import annotations

import functools
import re
from typing import Any

import yaml

_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*")


class WorkflowFileError(ValueError):
    """What GitHub would answer with a 422 when dispatching this workflow."""


def parse(text: bytes | None) -> dict[str, Any] | None:
    """The workflow document, or None when the repository has no such file at that ref (callers only
    read it: the same text gives the same document object, parsed once; a long workflow file takes
    PyYAML some 15 ms, and every dispatch and its run's title read the file)."""
    if text is None:
        return None
    return _parse(bytes(text))


@functools.lru_cache(maxsize=32)
def _parse(text: bytes) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        raise WorkflowFileError("Invalid workflow file") from None
    return doc if isinstance(doc, dict) else {}


def _triggers(doc: dict[str, Any]) -> dict[str, Any]:
    triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` key as True
    if isinstance(triggers, str):
        return {triggers: None}
    if isinstance(triggers, list):
        return {t: None for t in triggers}
    return triggers if isinstance(triggers, dict) else {}


def resolve_inputs(doc: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Check dispatch inputs as GitHub does; return the `inputs` context (declared defaults filled in)."""
    triggers = _triggers(doc)
    if "workflow_dispatch" not in triggers:
        raise WorkflowFileError("Workflow does not have 'workflow_dispatch' trigger")
    declared = ((triggers.get("workflow_dispatch") or {}).get("inputs")) or {}
    unexpected = sorted(set(given) - set(declared))
    if unexpected:
        raise WorkflowFileError(f"Unexpected inputs provided: {unexpected}")
    context: dict[str, Any] = {}
    for name, spec in declared.items():
        spec = spec or {}
        if name in given:
            value = given[name]
        elif spec.get("default") is not None:
            value = spec["default"]
        elif spec.get("required"):
            raise WorkflowFileError(f"Required input '{name}' not provided")
        else:
            value = ""
        options = spec.get("options")
        if spec.get("type") == "choice" and name in given and options and str(value) not in map(str, options):
            raise WorkflowFileError(f"Provided value '{value}' for input '{name}' not in the list of allowed values")
        context[name] = value
    return context


def run_name(doc: dict[str, Any] | None, fallback: str, contexts: dict[str, Any]) -> str:
    """The run's display title: `run-name` with `${{ inputs.x }}` / `${{ github.x }}` filled in, else fallback.

    Only property lookups are evaluated (what run-name templates use); any other expression (a function,
    an operator) is kept as written so that a test sees it rather than a wrong guess.
    """
    template = (doc or {}).get("run-name")
    if not isinstance(template, str):
        return fallback

    def evaluate(match: re.Match[str]) -> str:
        expr = match.group(1)
        if not _PATH.fullmatch(expr):
            return match.group(0)
        value: Any = contexts
        for part in expr.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return _EXPRESSION.sub(evaluate, template)
