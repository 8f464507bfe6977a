"""The runner's side of an adaptive search: each next point from the results so far, and the trace."""
from __future__ import annotations

from collections.abc import Iterator

from bot.core.jobs import Case, LoadPoint, SearchSpec
from bot.core.results import PointResult, SearchChoice, SearchTrace
from bot.runner.search import Measurement, Measurements, next_point, suggested_concurrency


def measurement_of(result: PointResult) -> Measurement | None:
    """What the search reads from a point's result; None for a point that gave no figures."""
    if result.status != "passed" or result.metrics is None:
        return None
    m = result.metrics
    return Measurement(tput_per_gpu=m.tput_per_gpu, interactivity=m.interactivity,
                       ttft_ms=m.ttft_ms.get("median"))


def measurements(points: list[PointResult]) -> Measurements:
    return {p.concurrency: measurement_of(p) for p in points}


def point_at(spec: SearchSpec, template: LoadPoint, concurrency: int) -> LoadPoint:
    """The template point moved to `concurrency`, sized by the workload's per-point rules."""
    label = template.point_id.removesuffix("-search")
    prompts = template.num_prompts
    if spec.prompts_per_concurrency is not None:
        prompts = max(spec.min_prompts, spec.prompts_per_concurrency * concurrency)
    warmups = template.num_warmups
    if spec.warmups_per_concurrency is not None:
        warmups = spec.warmups_per_concurrency * concurrency
    return template.model_copy(update={"point_id": f"{label}-c{concurrency}", "concurrency": concurrency,
                                       "num_prompts": prompts, "num_warmups": warmups})


def fixed_points(case: Case) -> list[LoadPoint]:
    """A search case's planned points: those after its template when they are interleaved, else none."""
    assert case.search is not None
    return case.points[1:] if case.search.interleave else []


def own_points(case: Case, points: list[PointResult]) -> list[PointResult]:
    """The search's own results among a case's, without the fixed points interleaved with them."""
    fixed = {p.point_id for p in fixed_points(case)}
    return [p for p in points if p.point_id not in fixed]


def search_points(case: Case, done: list[PointResult]) -> Iterator[LoadPoint]:
    """Yield the next point to run until the search stops; `done` grows as the runner records
    each result (the caller appends to it between yields); the search reads only its own."""
    assert case.search is not None and case.points
    while True:
        decision = next_point(case.search, measurements(own_points(case, done)))
        if decision.next is None:
            return
        yield point_at(case.search, case.points[0], decision.next)


def case_points(case: Case, done: list[PointResult]) -> Iterator[LoadPoint]:
    """The case's points in the order they run: the list, the search's choices, or (interleave)
    both spread over the same time: before the search's k-th point, the fixed points up to
    k/budget of them (a 28-point grid and a budget of 9: 4 fixed, 1 search, 3 fixed, 1 search, ...)."""
    if case.search is None:
        yield from case.points
        return
    searching = search_points(case, done)
    fixed, budget = fixed_points(case), case.search.budget
    if not fixed:
        yield from searching
        return
    ran = 0
    for k, point in enumerate(searching, start=1):
        share = -(-k * len(fixed) // budget)  # ceil: a fixed point first
        yield from fixed[ran:share]
        ran = max(ran, share)
        yield point
    yield from fixed[ran:]  # the search stopped before its budget


def search_trace(spec: SearchSpec, points: list[PointResult]) -> SearchTrace:
    """Replay the choices on the recorded results (the search is deterministic) and say why it stopped."""
    results: Measurements = {}
    choices: list[SearchChoice] = []
    recorded = {p.concurrency: measurement_of(p) for p in points}
    stop = stop_why = answer = None
    while True:
        decision = next_point(spec, results)
        answer = decision.answer
        if decision.next is None:
            stop, stop_why = decision.stop, decision.why
            break
        if decision.next not in recorded:  # interrupted before this point ran
            break
        choices.append(SearchChoice(concurrency=decision.next, why=decision.why))
        results[decision.next] = recorded[decision.next]
    return SearchTrace(target=spec.target, range=spec.range, budget=spec.budget, tolerance=spec.tolerance,
                       bound=spec.bound.model_dump() if spec.bound else None, choices=choices, stop=stop,
                       stop_why=stop_why, answer=answer, suggested=suggested_concurrency(spec, results))
