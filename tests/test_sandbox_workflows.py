"""Dispatch reads the workflow file as GitHub does: the trigger, the declared inputs, and `run-name`."""
from __future__ import annotations

from typing import Any

import pytest

from github_sandbox.workflows import WorkflowFileError, parse, resolve_inputs, run_name

WORKFLOW = b"""
name: gpu
run-name: "recipe-bot pr-${{ inputs.pr }} ${{ inputs.sha }} by ${{ github.actor }}: ${{ inputs.command }}"
on:
  workflow_dispatch:
    inputs:
      pr: {required: true}
      sha: {required: true}
      command: {required: false, default: /sweep}
      mode: {type: choice, options: [fast, full], default: fast}
      debug: {type: boolean, default: false}
"""


@pytest.mark.parametrize("given, context", [
    ({"pr": "7", "sha": "abc"}, {"pr": "7", "sha": "abc", "command": "/sweep", "mode": "fast", "debug": False}),
    ({"pr": "7", "sha": "abc", "mode": "full", "command": "/e2e"},
     {"pr": "7", "sha": "abc", "command": "/e2e", "mode": "full", "debug": False}),
], ids=["defaults-filled-in", "given-values-win"])
def test_declared_inputs_resolve_with_their_defaults(given: dict[str, Any], context: dict[str, Any]) -> None:
    assert resolve_inputs(parse(WORKFLOW), given) == context


@pytest.mark.parametrize("doc, given, message", [
    (WORKFLOW, {"sha": "abc"}, "Required input 'pr' not provided"),
    (WORKFLOW, {"pr": "7", "sha": "a", "extra": "x", "more": "y"}, "Unexpected inputs provided: ['extra', 'more']"),
    (WORKFLOW, {"pr": "7", "sha": "a", "mode": "slow"}, "Provided value 'slow' for input 'mode' not in the list"),
    (b"on: push\n", {}, "Workflow does not have 'workflow_dispatch' trigger"),
    (b"on: [push, pull_request]\n", {}, "Workflow does not have 'workflow_dispatch' trigger"),
    (b"on: {\n", {}, "Invalid workflow file"),
], ids=["missing-required", "unexpected", "choice-outside-options", "push-only", "list-without-dispatch", "not-yaml"])
def test_dispatches_github_would_refuse_are_refused(doc: bytes, given: dict[str, Any], message: str) -> None:
    with pytest.raises(WorkflowFileError, match=message.replace("[", r"\[").replace("]", r"\]")):
        resolve_inputs(parse(doc), given)


def test_a_bare_list_trigger_with_dispatch_accepts_no_inputs() -> None:
    assert resolve_inputs(parse(b"on: [push, workflow_dispatch]\n"), {}) == {}


@pytest.mark.parametrize("template, expected", [
    ("recipe-bot pr-${{ inputs.pr }} ${{ inputs.sha }} by ${{ github.actor }}: ${{ inputs.command }}",
     "recipe-bot pr-7 abc by alice: /sweep"),
    ("${{github.event.inputs.pr}}/${{ github.ref_name }}", "7/feature"),
    ("missing [${{ inputs.nope }}]", "missing []"),
    ("flag ${{ inputs.debug }}", "flag false"),
    ("${{ format('{0}', inputs.pr) }}", "${{ format('{0}', inputs.pr) }}"),
], ids=["recipe-bot-title", "github-context", "unknown-is-empty", "boolean", "functions-left-as-written"])
def test_run_name_renders_property_lookups(template: str, expected: str) -> None:
    context = {"inputs": {"pr": "7", "sha": "abc", "command": "/sweep", "debug": False},
               "github": {"actor": "alice", "ref_name": "feature", "event": {"inputs": {"pr": "7"}}}}
    assert run_name({"run-name": template}, "gpu", context) == expected


def test_without_run_name_the_title_is_the_workflow_name() -> None:
    assert run_name({"name": "gpu"}, "gpu", {}) == "gpu"
    assert run_name(None, "gpu", {}) == "gpu"
