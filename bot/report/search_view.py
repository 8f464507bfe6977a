"""What the report shows of an adaptive search: the points it chose, why it stopped, a YAML snippet."""
from __future__ import annotations

from bot.core.results import SearchTrace


def yaml_snippet(concurrency: list[int]) -> str:
    """The line to paste into the recipe's arm (flow style, like the recipes in this repository)."""
    return f"concurrency: [{', '.join(str(c) for c in concurrency)}]"


def search_view(case: str, trace: SearchTrace) -> dict:
    return {
        "case": case, "target": trace.target, "lo": trace.range[0], "hi": trace.range[1],
        "budget": trace.budget, "tolerance": f"{trace.tolerance:g}",
        "bound": trace.bound, "chosen": [c.concurrency for c in trace.choices],
        "stop": trace.stop or "interrupted", "answer": trace.answer,
        "snippet": yaml_snippet(trace.suggested) if trace.suggested else None,
    }
