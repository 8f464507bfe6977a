"""InferenceX rows that run through the repository's own benchmark templates: their kind and time limit.

The GPU workflow's InferenceX row jobs call the templates of the revision it runs (the default branch), so
`recipe-bot plan` reads them from that revision (`--allowed-from`, else the head it plans) and marks each row
with the template that runs it and that template's `timeout-minutes` as its limit.
"""
from __future__ import annotations

from bot.core.messages import msg
from bot.inferencex.templates import Templates, TemplateError, read_templates, row_inputs
from bot.plan.model import MatrixEntry, Plan, PlanError
from bot.recipes.sources import Source


def templates_at(source: Source) -> Templates | None:
    """The repository's benchmark templates at `source`; a template recipe-bot cannot read stops the plan."""
    def read(path: str) -> str | None:
        data = source.read(path)
        return data.decode("utf-8", "replace") if data is not None else None
    try:
        return read_templates(read)
    except TemplateError as exc:
        raise PlanError(msg("InferenceX benchmark template: %(problem)s", problem=str(exc))) from None


def _entries(plan: Plan) -> list[MatrixEntry]:
    ix = plan.inferencex
    if ix is None:
        return []
    return [*([ix.canary] if ix.canary else []), *(e for m in ix.matrices for e in m.include)]


def apply_templates(plan: Plan, templates: Templates | None) -> None:
    """Each InferenceX row whose template exists runs through it: its backend names the template's kind and
    its limit is the template's `timeout-minutes` for the row's inputs (no cluster limit: the template's own
    launcher allocates)."""
    if templates is None:
        return
    agentx_fast = bool(plan.filters.agentx_fast)
    for entry in _entries(plan):
        if not isinstance(entry.row, dict):
            continue
        kind, inputs = row_inputs(entry.row, agentx_fast=agentx_fast)
        template = templates.for_kind(kind)
        if template is None:
            continue
        try:
            minutes = template.minutes(inputs)
        except TemplateError as exc:
            raise PlanError(msg("InferenceX benchmark template: %(problem)s", problem=str(exc))) from None
        entry.backend = kind
        entry.limit_s = minutes * 60.0
        entry.limit_source = f"{template.path} timeout-minutes: {minutes}"
