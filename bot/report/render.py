"""Render the report in English then 简体中文 from one view, within GitHub's comment size limit.

Long per-recipe tables fold into <details>. Past the limit, the renderer shows fewer rows per
recipe (failed and regressed rows first, always above the fold), fewer and shorter log tails,
then fewer recipe sections, each time saying how many are left out and that full-results.json
in the run's artifacts has everything.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from bot.core import i18n
from bot.core import stage_markers
from bot.report import chart, failure_groups, noise, plausible
from bot.report.model import E2ERow, Failure, PointRow, RecipeSection, Report
from bot.report.search_view import search_view
from bot.report.sources import Source

COMMENT_LIMIT = 65_536  # GitHub's maximum issue comment body, in characters
COMMENT_BUDGET = 65_000  # what the renderer aims for: a margin for line-ending or counting quirks
CHECK_SUMMARY_LIMIT = 65_535  # check run output.summary
TEMPLATE = "report/comment"
FOLD_AT = 8  # a recipe with more rows than this folds its full table into <details>
FULL_RESULTS = "full-results.json"


@dataclass(frozen=True)
class Limits:
    """How much of the report a comment shows; None means everything."""

    rows_per_recipe: int | None = None
    attention_per_recipe: int | None = None
    failures: int | None = None
    log_lines: int = 40
    recipes: int | None = None


@dataclass(frozen=True)
class Rendered:
    text: str
    limits: Limits
    shortened: bool


def number(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def percent(value: float) -> str:
    return f"{value:+.1f}%"


def fenced(text: str) -> str:
    """A code block that no backtick run inside the (untrusted) text can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def tail(text: str, lines: int, width: int = 300, budget: int = 4000) -> str:
    kept = [line[:width] + (" …" if len(line) > width else "")
            for line in text.rstrip("\n").splitlines()[-lines:]]
    while kept and sum(len(line) + 1 for line in kept) > budget:
        kept.pop(0)
    return "\n".join(kept)


def interval(delta) -> str | None:
    """The Δ's interval in the Δ's own sign, e.g. "[-13.0, -7.5]"; None without one."""
    bounds = delta.change_interval
    return None if bounds is None else f"[{bounds[0]:+.1f}, {bounds[1]:+.1f}]"


def _percentile(value: float | None, requests: int | None, metric: str) -> str:
    """A percentile only where the requests support it; else the count that falls short."""
    if value is not None and not noise.supported(metric, requests):
        return f"— (n={requests})"
    return number(value)


def _row(row: PointRow, gated: list[str]) -> dict:
    comparison = row.comparison
    deltas = []
    for key in gated:
        delta = comparison.delta(key) if comparison else None
        deltas.append(None if delta is None else {
            "pct": percent(delta.change_pct), "verdict": delta.verdict,
            "interval": interval(delta),
            "noise": None if delta.noise_pct is None else f"±{delta.noise_pct:.1f}%"})
    status = "regressed" if row.regressed else row.status
    odd = plausible.implausible(row)
    if odd is not None and status == "passed":
        status = "implausible"  # shown with its reason, never as a plain pass
    return {
        "arm": row.arm, "conc": row.concurrency, "tput": number(row.tput_per_gpu),
        "intvty": number(row.interactivity), "ttft50": _percentile(row.ttft_p50, row.requests,
                                                                     "ttft_p50"),
        "ttft99": _percentile(row.ttft_p99, row.requests, "ttft_p99"),
        "tpot": _percentile(row.tpot_p50, row.requests, "tpot_p50"), "status": status,
        "thin": not noise.supported("ttft_p99", row.requests) and row.ttft_p99 is not None,
        # A lost or cancelled job's reason is told once, under Failures, not on each of its rows.
        "reason": row.reason if row.status in ("failed", "skipped") else None,
        "base": comparison is not None, "measured": row.status == "passed", "deltas": deltas,
        "implausible": None if odd is None else dataclasses.asdict(odd),
    }


def _spread(rows: list[PointRow], keep: int) -> list[PointRow]:
    """`keep` rows taken round-robin over the arms, so that every arm keeps a share."""
    by_arm: dict[str, list[PointRow]] = {}
    for row in rows:
        by_arm.setdefault(row.arm, []).append(row)
    queues = list(by_arm.values())
    picked: list[PointRow] = []
    depth = 0
    while len(picked) < keep and any(depth < len(q) for q in queues):
        picked += [q[depth] for q in queues if depth < len(q)][: keep - len(picked)]
        depth += 1
    order = {id(row): index for index, row in enumerate(rows)}
    return sorted(picked, key=lambda row: order[id(row)])


def _section_facts(section: RecipeSection, row_view: Callable[[PointRow], dict]) -> dict:
    """What a section shows whatever the size limits: worked out once, not once an attempt."""
    rows = list(section.rows)
    compared = [r for r in rows if r.comparison is not None]
    bases = {r.comparison.basis for r in compared}
    return {
        "attention": [r for r in rows if r.needs_attention or plausible.implausible(r) is not None],
        "source": _source(section.source),
        "basis": next((b for b in ("none", "runs", "requests") if b in bases), None),
        "fewest_requests": min((r.requests for r in compared if r.requests), default=None),
        "reproduce": [{"job": job, "runner": runner, "command": command}
                      for job, runner, command in section.reproduce],
        "thin": any(r.status == "passed" and not noise.supported("ttft_p99", r.requests)
                    and r.ttft_p99 is not None for r in rows),
        "recipe": section.recipe, "fingerprint": section.fingerprint,
        "runners": list(section.runner_labels), "engines": list(section.engines),
        "gpus": section.gpus, "env_changes": list(section.env_changes),
        "points": len(rows), "failed": sum(1 for r in rows if r.status != "passed"),
        "regressed": sum(1 for r in rows if r.regressed),
        "no_baseline": sum(1 for r in rows if r.status == "passed" and r.comparison is None),
        "base_runs": max((r.comparison.base_runs for r in compared), default=0),
        "fold": len(rows) > FOLD_AT,
        "searches": [search_view(name, trace) for name, trace in section.searches],
        "duty": list(section.duty),
        "power": list(section.power),
    }


def _section(section: RecipeSection, gated: list[str], limits: Limits,
             row_view: Callable[[PointRow], dict], facts: dict | None = None) -> dict:
    facts = facts or _section_facts(section, row_view)
    rows = list(section.rows)
    attention = facts["attention"]
    fold = facts["fold"]
    shown_attention = attention if limits.attention_per_recipe is None \
        else attention[:limits.attention_per_recipe]
    shown_rows = rows if limits.rows_per_recipe is None else _spread(rows, limits.rows_per_recipe)
    return {
        **facts,
        "attention": [row_view(r) for r in shown_attention] if fold else [],
        "attention_hidden": len(attention) - len(shown_attention) if fold else 0,
        "rows": [row_view(r) for r in shown_rows],
        "rows_hidden": len(rows) - len(shown_rows),
    }


def _source(source: Source | None) -> dict:
    source = source or Source((), None, "unknown", "unknown", False)
    return {"hosts": list(source.hosts), "model": source.model, "weights": source.weights,
            "dataset": source.dataset, "disclosure": source.disclosure,
            "sha_checked": source.sha_checked}


def _gate_data(accuracy: object | None) -> str | None:
    """What scored a gate, as the E2E table names it: `sample` (recipe-bot's own problems), the hub's
    dataset, a local file's name; None for older results that do not say."""
    source = getattr(accuracy, "source", None)
    if not source:
        return None
    if getattr(accuracy, "gsm8k", None) is False:
        return "sample"
    if source.startswith("huggingface:"):
        return source.removeprefix("huggingface:")
    return "/".join(source.removeprefix("local:").split(" (", 1)[0].rsplit("/", 2)[-2:])


def _e2e(row: E2ERow) -> dict:
    accuracy = row.accuracy
    cleanup = row.cleanup
    return {
        "suite": row.suite, "case": row.case, "status": row.status, "reason": row.reason,
        "strict": None if accuracy is None else f"{accuracy.strict_match:.3f}",
        "flexible": None if accuracy is None else f"{accuracy.flexible_extract:.3f}",
        "metric": None if accuracy is None else accuracy.metric,
        "samples": None if accuracy is None else accuracy.num_samples,
        "shots": None if accuracy is None else accuracy.num_shots,
        "threshold": None if accuracy is None else f"{accuracy.threshold:.2f}",
        "gate": None if accuracy is None else accuracy.passed,
        "data": _gate_data(accuracy),
        "cleanup": cleanup.state,
        "pids": ", ".join(map(str, cleanup.leftover_pids)),
        "ports": ", ".join(map(str, cleanup.busy_ports)),
        "gpu_back": cleanup.gpu_memory_back,
        "teardown": None if cleanup.teardown_s is None else f"{cleanup.teardown_s:.1f}",
    }


def _failure(failure: Failure, limits: Limits) -> dict:
    log = tail(failure.log_tail, limits.log_lines) if failure.log_tail and limits.log_lines else ""
    return {
        "job": failure.job_id, "recipe": failure.recipe, "case": failure.case,
        "status": failure.status, "reason": failure.reason, "runner": failure.runner_label,
        "source": failure.source, "slurm": failure.slurm, "attempts": failure.attempts,
        "log": fenced(log) if log else None,
        "log_lines": len(log.splitlines()) if log else 0,
    }


def _link(url: str | None) -> str | None:
    """Only plain http(s) URLs become links; anything else could break out of the Markdown."""
    if url and re.fullmatch(r"https?://[^\s()<>\[\]`]+", url):
        return url
    return None


class _Views:
    """What every size attempt shares: the chart, the gated metrics, each row's view."""

    def __init__(self, report: Report):
        thresholds = report.meta.thresholds
        gated = [k for k in ("tput_per_gpu", "ttft_p99") if k in thresholds]
        gated += sorted(k for k in thresholds if k not in gated)
        self.gated = gated or ["tput_per_gpu"]  # with every gate off, Δ is still shown
        self.chart = chart.mermaid_chart(chart.plotted(report))
        self._rows: dict[int, dict] = {}
        self._sections: dict[int, dict] = {}
        self.implausible = plausible.count(report)
        # Counted over every row once, not once a size attempt (a large report tries a dozen).
        compared = [row.comparison for section in report.recipes for row in section.rows
                    if row.comparison is not None]
        self.inconclusive = sum(1 for c in compared if not c.regressions and not c.improvements
                                and any(d.verdict == "inconclusive" for d in c.deltas))
        self.compared_runs = max((c.base_runs for c in compared), default=0)

    def row(self, row: PointRow) -> dict:
        key = id(row)
        if key not in self._rows:
            self._rows[key] = _row(row, self.gated)
        return self._rows[key]

    def section(self, section: RecipeSection, limits: Limits) -> dict:
        facts = self._sections.get(id(section))
        if facts is None:
            facts = self._sections[id(section)] = _section_facts(section, self.row)
        return _section(section, self.gated, limits, self.row, facts)


def view(report: Report, limits: Limits = Limits(), views: _Views | None = None) -> dict:
    """Everything the templates show, already cut to `limits`; identical for both languages."""
    views = views or _Views(report)
    meta, counts = report.meta, report.counts
    recipes = list(report.recipes)
    shown_recipes = recipes if limits.recipes is None else recipes[:limits.recipes]
    failures = list(report.failures)
    shown_failures = failures if limits.failures is None else failures[:limits.failures]
    swept = [section.recipe for section in recipes]
    failed_recipes = [f.recipe for f in failures if f.status in ("failed", "lost")]
    rerun_sweep = next((r for r in failed_recipes if r in swept), swept[0] if swept else None)
    failed_cases = list(dict.fromkeys(row.case for row in report.e2e
                                      if row.status in ("failed", "lost") and row.case != "—"))
    sections = [views.section(s, limits) for s in shown_recipes]
    return {
        "verdict": report.verdict.conclusion,
        "reasons": [{"code": r.code, "count": r.count} for r in report.verdict.reasons],
        "jobs": counts.jobs, "jobs_total": counts.jobs_total,
        "points": counts.points, "points_total": counts.points_total,
        "regressions": counts.regressions, "improvements": counts.improvements,
        "inconclusive": views.inconclusive,
        "compared_runs": views.compared_runs,
        "e2e_source": _source(meta.e2e_source),
        "within": counts.within, "no_baseline": counts.no_baseline,
        "implausible": views.implausible,
        "cpu_only": bool(recipes) and all(section.gpus == 0 for section in recipes),
        "sha": meta.sha, "command": meta.command, "pr": meta.pr,
        "run_url": _link(meta.run_url), "artifacts_url": _link(meta.artifacts_url),
        "base_shas": [s[:12] for s in meta.base_shas],
        "unreadable_baseline": len(meta.unreadable_baseline),
        "unreadable_baseline_why": "; ".join(meta.unreadable_baseline[:3])[:300],
        "thresholds": [{"metric": k, "pct": f"{meta.thresholds[k]:g}%"}
                       for k in views.gated if k in meta.thresholds],
        "gated": views.gated,
        "recipes": sections, "recipes_hidden": len(recipes) - len(shown_recipes),
        "rows_hidden": sum(s["rows_hidden"] for s in sections)
        + sum(len(s.rows) for s in recipes[len(shown_recipes):]),
        "e2e": [_e2e(row) for row in report.e2e],
        "failures": [_failure(f, limits) for f in shown_failures],
        "failure_groups": failure_groups.view(report.failure_groups, fenced, limits.log_lines),
        "calls": failure_groups.whom_to_call(report.failure_groups),
        "failures_hidden": len(failures) - len(shown_failures),
        "chart": views.chart,
        "rerun_sweep": rerun_sweep,
        "rerun_e2e": " ".join(failed_cases[:5]) or None,
        "full_results": FULL_RESULTS,
    }


def _ladder(report: Report) -> list[tuple[Limits, str | None]]:
    """Ever smaller comments, tried in order after the full one; each with the knob to search."""
    most_rows = max((len(s.rows) for s in report.recipes), default=0)
    return [
        (Limits(rows_per_recipe=most_rows, attention_per_recipe=20, failures=20, log_lines=40),
         "rows_per_recipe"),
        (Limits(rows_per_recipe=0, attention_per_recipe=5, failures=10, log_lines=15), None),
        (Limits(rows_per_recipe=0, attention_per_recipe=3, failures=5, log_lines=5,
                recipes=len(report.recipes)), "recipes"),
        (Limits(rows_per_recipe=0, attention_per_recipe=0, failures=3, log_lines=0, recipes=0),
         None),
    ]


def _within(template, context: dict, room: int) -> str | None:
    """template.render(**context).strip() (what i18n.render returns) when that is at most `room`
    characters, else None, given up as soon as what is written already cannot fit once stripped."""
    chunks: list[str] = []
    total = lead = trail = 0  # characters written; blank ones before the first and after the last
    seen = False  # a non-blank character written
    for chunk in template.generate(**context):
        chunks.append(chunk)
        total += len(chunk)
        kept = chunk.rstrip()
        if kept:
            if not seen:
                seen = True
                lead += len(chunk) - len(chunk.lstrip())
            trail = len(chunk) - len(kept)
        elif seen:
            trail += len(chunk)
        else:
            lead += len(chunk)
        if total - lead - trail > room:
            return None
    text = "".join(chunks).strip()
    return text if len(text) <= room else None


class _Sizer:
    def __init__(self, report: Report, limit: int):
        self.report, self.limit, self.views = report, limit, _Views(report)
        self.head = stage_markers.report_marker(report.meta.sha, report.failure_keys) + "\n"
        record = stage_markers.infra_record_line(failure_groups.runner_record(report.failure_groups))
        if record:  # the second line: infrastructure failures per host, for /status
            self.head += record + "\n"

    def attempt(self, limits: Limits, shortened: bool) -> Rendered | None:
        context = view(self.report, limits, self.views)
        context["shortened"] = shortened
        # head + i18n.render_bilingual(TEMPLATE, **context) + "\n", each language's render given
        # up as soon as it cannot fit: a large report's first attempts are twice the limit.
        room = self.limit - len(self.head) - 1 - len(i18n.SEPARATOR) * (len(i18n.LANGUAGES) - 1)
        parts = []
        for lang in i18n.LANGUAGES:
            part = _within(i18n.environment(lang).get_template(i18n.template_path(TEMPLATE)),
                           context, room)
            if part is None:
                return None
            parts.append(part)
            room -= len(part)
        text = self.head + i18n.SEPARATOR.join(parts) + "\n"
        return Rendered(text, limits, shortened)

    def largest(self, limits: Limits, knob: str) -> Rendered | None:
        """The largest value of `knob` (up to its value in `limits`) whose render fits: doubling
        from 0, then bisecting, so a huge report costs a few small renders, not huge ones."""
        ceiling = getattr(limits, knob)
        best = self.attempt(replace(limits, **{knob: 0}), True)
        if best is None:
            return None
        low, high = 0, None
        step = 1
        while high is None:
            value = min(step, ceiling)
            fitted = self.attempt(replace(limits, **{knob: value}), True)
            if fitted is None:
                high = value - 1
            else:
                best, low = fitted, value
                if value == ceiling:
                    return best
                step *= 2
        while low < high:
            middle = (low + high + 1) // 2
            fitted = self.attempt(replace(limits, **{knob: middle}), True)
            if fitted is None:
                high = middle - 1
            else:
                best, low = fitted, middle
        return best


# A point row is at least this long in each language: a report with more rows than the
# budget allows cannot fit whole, so the whole render is not even attempted.
_MIN_ROW_CHARS = 60


def render_comment(report: Report, limit: int = COMMENT_BUDGET) -> Rendered:
    """The sticky comment: the whole report if it fits, otherwise the most that fits."""
    sizer = _Sizer(report, limit)
    rows = sum(len(s.rows) for s in report.recipes)
    if rows * _MIN_ROW_CHARS * len(i18n.LANGUAGES) <= limit:
        whole = sizer.attempt(Limits(), False)
        if whole is not None:
            return whole
    for limits, knob in _ladder(report):
        fitted = sizer.largest(limits, knob) if knob else sizer.attempt(limits, True)
        if fitted is not None:
            return fitted
    # Nothing structured fits (thousands of failing jobs): cut, and say where the rest is.
    last = _ladder(report)[-1][0]
    context = view(report, last, sizer.views)
    context["shortened"] = True
    text = sizer.head + i18n.render_bilingual(TEMPLATE, **context)
    note = f"\n\n… ({FULL_RESULTS} in the run's artifacts has the full report)\n"
    return Rendered(text[: limit - len(note)] + note, last, True)


def check_summary(comment: str, limit: int = CHECK_SUMMARY_LIMIT) -> str:
    """The comment as a check run summary (without the marker), within the check run limit."""
    body = stage_markers.strip_report_marker(comment)
    if len(body) <= limit:
        return body
    note = f"\n\n… (shortened; {FULL_RESULTS} in the run's artifacts has everything)"
    return body[: limit - len(note)] + note
