"""The report's power line of a job: tok/s/W per point where InferenceX's rule found the power valid, else why not."""
from __future__ import annotations

from bot.core.i18n import inline_code
from bot.core.messages import Message, msg, plural
from bot.core.results import JobResult, joined


def power_lines(result: JobResult) -> list[Message]:
    """At most two lines: the valid points' tokens per joule (total tok/s per W of the case's GPUs) and
    InferenceX's reasons for the points whose power it would not publish; none when nothing was sampled."""
    points = [p for case in result.cases for p in case.points if p.power is not None and p.metrics is not None]
    lines: list[Message] = []
    valid = [p for p in points if p.power.valid and p.power.tokens_per_joule is not None]
    if valid:
        figures = [msg("%(point)s %(value)s tok/s/W (%(watts)s W a GPU)", point=p.point_id,
                       value=f"{p.power.tokens_per_joule:,.3f}",
                       watts=f"{p.metrics.inferencex.get('avg_power_w', 0):,.1f}") for p in valid]
        lines.append(msg("Power of %(job)s (NVML every %(interval)s s on GPUs %(gpus)s, InferenceX's rule): %(points)s",
                         job=inline_code(result.job_id), interval=f"{valid[0].power.interval_s:g}",
                         gpus=", ".join(valid[0].power.gpus), points=joined(figures)))
    invalid = [p for p in points if not p.power.valid]
    if invalid:
        reasons = list(dict.fromkeys(r for p in invalid for r in p.power.reasons))
        problem = next((p.power.problem for p in invalid if p.power.problem is not None), None)
        why: Message | str = ", ".join(reasons)
        if problem is not None:
            why = msg("%(reasons)s (%(problem)s)", reasons=why, problem=problem)
        lines.append(plural("Power of %(job)s not valid for %(count)s point: %(why)s",
                            "Power of %(job)s not valid for %(count)s points: %(why)s", len(invalid),
                            job=inline_code(result.job_id), why=why))
    return lines

