"""The verdict is the merge gate: failure beats neutral beats success, and skipped never passes."""
import pytest

from bot.report import build, collect, compare
from tests import synthetic
from bot.report.model import Meta

SWEEP = synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 2), job_id="sweep")
SUITE = synthetic.e2e_plan("afd", ["a", "b"])
GOOD_ACCURACY = {"a": (0.8, 0.8), "b": (0.8, 0.8)}


def passed_sweep():
    return synthetic.run_sweep(SWEEP)


def passed_suite():
    return synthetic.run_e2e(SUITE, accuracy=GOOD_ACCURACY)


def with_status(result, status, **changes):
    return result.model_copy(update={"status": status, "cases": [], **changes})


def with_case(result, index=0, **changes):
    cases = list(result.cases)
    cases[index] = cases[index].model_copy(update=changes)
    return result.model_copy(update={"cases": cases})


def report_for(tmp_path, plan, results, baseline=(), thresholds=None):
    synthetic.write_results(tmp_path / "results", results)
    synthetic.write_results(tmp_path / "base", baseline)
    (tmp_path / "results").mkdir(exist_ok=True)
    collection = collect.collect(tmp_path / "results", plan, synthetic.HEAD_SHA)
    return build.build_report(collection, compare.load_baseline(tmp_path / "base"),
                              thresholds or compare.thresholds_from(None),
                              Meta(sha=synthetic.HEAD_SHA))


def dirty(result):
    proof = result.cases[0].cleanup.model_copy(update={"leftover_pids": [4242],
                                                       "groups_gone": False})
    return with_case(result, cleanup=proof)


CASES = [
    # id, plan, results, baseline, conclusion, reason codes
    ("all-passed", [SWEEP, SUITE], lambda: [passed_sweep(), passed_suite()], [],
     "success", ["all_passed"]),
    ("job-failed", [SWEEP], lambda: [synthetic.run_sweep(SWEEP, failed_points={"tp1-c1": "x"})],
     [], "failure", ["failed_jobs"]),
    ("runner-lost", [SWEEP, SUITE], lambda: [passed_suite()], [], "failure", ["lost_jobs"]),
    ("accuracy-below-threshold", [SUITE],
     lambda: [synthetic.run_e2e(SUITE, accuracy={"a": (0.5, 0.9), "b": (0.8, 0.8)})], [],
     "failure", ["failed_jobs", "accuracy"]),
    ("sigkill-escalation", [SUITE],
     lambda: [synthetic.run_e2e(SUITE, accuracy=GOOD_ACCURACY, sigkill_cases=["b"])], [],
     "failure", ["failed_jobs", "sigkill"]),
    # A runner that says "passed" while its own proof shows leftovers does not pass the gate.
    ("cleanup-proof-failed", [SUITE], lambda: [dirty(passed_suite())], [],
     "failure", ["failed_jobs", "cleanup"]),
    ("regression", [SWEEP], lambda: [synthetic.run_sweep(SWEEP, scale=0.8, per_request=True)],
     [synthetic.run_sweep(SWEEP, sha=synthetic.BASE_SHA, per_request=True)], "failure",
     ["regressions"]),
    ("stale-result", [SWEEP], lambda: [synthetic.run_sweep(SWEEP, sha="1" * 40)], [],
     "failure", ["stale_results"]),
    ("everything-cancelled", [SWEEP, SUITE],
     lambda: [with_status(passed_sweep(), "cancelled"), with_status(passed_suite(), "cancelled")],
     [], "neutral", ["nothing_ran"]),
    ("everything-skipped", [SWEEP], lambda: [with_status(passed_sweep(), "skipped")], [],
     "neutral", ["nothing_ran"]),
    ("nothing-planned", [], lambda: [], [], "neutral", ["nothing_ran"]),
    ("some-cancelled", [SWEEP, SUITE],
     lambda: [passed_sweep(), with_status(passed_suite(), "cancelled")], [],
     "neutral", ["incomplete"]),
    ("a-skipped-case-in-a-passed-job", [SUITE],
     lambda: [with_case(passed_suite(), 1, status="skipped")], [], "neutral", ["incomplete"]),
    ("no-baseline-is-not-a-failure", [SWEEP], lambda: [passed_sweep()], [],
     "success", ["all_passed"]),
]


@pytest.mark.parametrize("plan, make_results, baseline, conclusion, codes",
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_verdict(tmp_path, plan, make_results, baseline, conclusion, codes):
    report = report_for(tmp_path, plan, make_results(), baseline)
    assert report.verdict.conclusion == conclusion
    assert [reason.code for reason in report.verdict.reasons] == codes


def test_skipped_work_is_counted_as_skipped_never_as_passed(tmp_path):
    skipped = synthetic.run_sweep(SWEEP)
    case = skipped.cases[0]
    points = [p.model_copy(update={"status": "skipped", "metrics": None}) for p in case.points]
    skipped = with_case(skipped, status="skipped", points=points).model_copy(
        update={"status": "skipped"})
    report = report_for(tmp_path, [SWEEP], [skipped])
    assert report.counts.jobs["skipped"] == 1 and report.counts.jobs["passed"] == 0
    assert report.counts.points == {"passed": 0, "failed": 0, "lost": 0, "cancelled": 0,
                                    "skipped": 2}
    assert all(row.status == "skipped" for row in report.recipes[0].rows)


def test_a_lost_job_keeps_its_planned_points_and_cases_visible(tmp_path):
    report = report_for(tmp_path, [SWEEP, SUITE], [])
    assert [(r.point_id, r.status) for r in report.recipes[0].rows] == [
        ("tp1-c1", "lost"), ("tp1-c2", "lost")]
    assert [(r.case, r.status) for r in report.e2e] == [("a", "lost"), ("b", "lost")]
    assert report.counts.points["lost"] == 2
    assert {f.key for f in report.failures} == {"sweep//lost", "e2e-afd//lost"}


def test_a_regressed_point_is_a_failure_key_for_the_sticky_comment(tmp_path):
    report = report_for(tmp_path, [SWEEP], [synthetic.run_sweep(SWEEP, scale=0.8, per_request=True)],
                        [synthetic.run_sweep(SWEEP, sha=synthetic.BASE_SHA, per_request=True)])
    assert report.failure_keys == ["sweep/tp1-c1/regressed", "sweep/tp1-c2/regressed"]


@pytest.mark.parametrize("case_name, arm", [
    ("tp8", "tp8"), ("tp8-conc64", "tp8"), ("tp8_c64", "tp8"), ("tp8-ep8.concurrency-4", "tp8-ep8"),
    ("c64", "c64"), ("disc4", "disc4"),
], ids=["plain", "conc-suffix", "c-suffix", "concurrency-suffix", "only-concurrency", "word"])
def test_arm_is_the_case_name_without_its_concurrency(case_name, arm):
    assert build.arm_name(case_name) == arm


def test_planned_points_a_passed_job_did_not_report_show_as_skipped(tmp_path):
    partial = synthetic.run_sweep(SWEEP)
    case = partial.cases[0]
    partial = with_case(partial, points=case.points[:1])
    report = report_for(tmp_path, [SWEEP], [partial])
    assert [(r.point_id, r.status) for r in report.recipes[0].rows] == [
        ("tp1-c1", "passed"), ("tp1-c2", "skipped")]
    assert report.verdict.conclusion == "neutral"
    assert [r.code for r in report.verdict.reasons] == ["incomplete"]
