"""An InferenceX repository's own benchmark templates: whether they exist, their time limits, a row's inputs.

gpu.yml's InferenceX row jobs (in `gpu-run-inferencex.yml`) call the repository's `benchmark-tmpl.yml` and
`benchmark-multinode-tmpl.yml` as reusable workflows; this module reads those files (as data, from the
revision the GPU workflow runs: the default branch) so that the plan knows which rows go to a template,
each row's limit is the template's own `timeout-minutes`, and each row's inputs are the ones InferenceX's
`run-sweep.yml` passes for it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from bot.core.messages import msg
from bot.inferencex import expr
from bot.inferencex.rowenv import multinode_inputs, template_inputs

SINGLE_NODE = ".github/workflows/benchmark-tmpl.yml"
MULTI_NODE = ".github/workflows/benchmark-multinode-tmpl.yml"
# What the GPU workflow runs a row with: recipe-bot's own `recipe-bot run`, or one of the two templates.
KIND_SINGLE, KIND_MULTI = "single-node", "multi-node"

class TemplateError(ValueError):
    """A template whose `timeout-minutes` or inputs recipe-bot cannot read."""


@dataclass(frozen=True)
class Template:
    path: str
    timeout: str  # the job's `timeout-minutes`, as written
    inputs: dict[str, str] = field(default_factory=dict)  # input name → its declared type

    def minutes(self, inputs: dict[str, str]) -> int:
        """The job's `timeout-minutes` for these inputs: a number, or an expression of the templates' subset
        (`${{ inputs.scenario-type == 'agentic-coding' && 780 || 480 }}`), evaluated as the row's env is."""
        def lookup(name: str) -> object:
            if name != "inputs":
                raise expr.ExpressionError(name, msg("the context %(name)s", name=name))
            return inputs

        try:
            value = expr.interpolate(self.timeout.strip(), lookup)
        except expr.ExpressionError as exc:
            raise TemplateError(f"{self.path}: timeout-minutes {self.timeout!r}: {exc}") from None
        text = expr.to_text(value).strip()
        if not text.isdigit():
            raise TemplateError(f"{self.path}: timeout-minutes {self.timeout!r} is {text!r}, not a whole number "
                                "of minutes")
        return int(text)

    def typed(self, inputs: dict[str, str]) -> dict[str, str | bool]:
        """The inputs this template declares, booleans as JSON booleans (a `type: boolean` input refuses a
        string); the ones it does not declare are left out, as GitHub would refuse them."""
        out: dict[str, str | bool] = {}
        for name, value in inputs.items():
            kind = self.inputs.get(name)
            if kind is None:
                continue
            out[name] = value == "true" if kind == "boolean" else value
        return out


def parse_template(path: str, text: str) -> Template:
    """The template's one job's `timeout-minutes` and its `workflow_call` inputs' types."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TemplateError(f"{path}: not YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise TemplateError(f"{path}: not a workflow")
    on = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as True
    call = on.get("workflow_call") if isinstance(on, dict) else None
    jobs = doc.get("jobs")
    if not isinstance(call, dict) or not isinstance(jobs, dict) or len(jobs) != 1:
        raise TemplateError(f"{path}: not a reusable workflow (on: workflow_call) with one job")
    (job,) = jobs.values()
    timeout = job.get("timeout-minutes") if isinstance(job, dict) else None
    if timeout is None:
        raise TemplateError(f"{path}: its job has no timeout-minutes")
    declared = call.get("inputs") or {}
    types = {str(k): str((v or {}).get("type", "string")) for k, v in declared.items()}
    return Template(path, str(timeout), types)


def row_inputs(row: dict, *, agentx_fast: bool = False) -> tuple[str, dict[str, str]]:
    """Which template a row goes to and its inputs (strings, as GitHub renders them), as run-sweep.yml's
    jobs fill them (bot.inferencex.rowenv: the same inputs `recipe-bot run` evaluates the template with)."""
    if "prefill" in row and "decode" in row:
        return KIND_MULTI, multinode_inputs(row, agentx_fast=agentx_fast)
    return KIND_SINGLE, template_inputs(row, agentx_fast=agentx_fast)


@dataclass(frozen=True)
class Templates:
    """The repository's templates at the revision the GPU workflow runs (None: that one is absent)."""
    single: Template | None
    multi: Template | None

    def for_kind(self, kind: str) -> Template | None:
        return self.single if kind == KIND_SINGLE else self.multi


def read_templates(read) -> Templates | None:  # noqa: ANN001 - read(path) -> str | None
    """Both templates through `read` (a revision's file reader); None when neither exists."""
    found = {}
    for path in (SINGLE_NODE, MULTI_NODE):
        text = read(path)
        found[path] = parse_template(path, text) if text is not None else None
    if not any(found.values()):
        return None
    return Templates(found[SINGLE_NODE], found[MULTI_NODE])
