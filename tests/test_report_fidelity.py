"""Figures a maintainer can trust, pinned by golden files: the kept H200 report, the disclosure
line, the reproduction commands (both languages), the chart's axis and the summary lines."""
import pathlib
import re
import shutil

import pytest

from bot.core import i18n
from bot.report import build, chart, compare, render, sources
from tests import synthetic
from bot.report.collect import CollectedJob, Collection, collect, load_plan
from bot.report.model import Meta
from bot.core.results import Provenance
from golden_helpers import assert_golden

GOLDEN = pathlib.Path(__file__).parent / "golden" / "fidelity"
SMOKE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "gpu-runs" / "2026-11-30"
UNPACKED = ("gpu-smoke-vllm--tp1--c1", "gpu-smoke-vllm--tp1--c16", "gpu-smoke-vllm--tp1--c64")
HEAD_SHA = synthetic.HEAD_SHA


def golden(name: str, text: str) -> None:
    assert_golden(GOLDEN / name, text)


def h200_report(tmp_path, sha=None):
    """The kept H200 runs: unpacked as head, packed as base, with the planned jobs."""
    for job in UNPACKED:
        shutil.copytree(SMOKE / "results" / job, tmp_path / "head" / job)
    shutil.copytree(SMOKE / "results" / "gpu-smoke-vllm--tp1", tmp_path / "base" / "packed")
    collection = collect(tmp_path / "head", load_plan(SMOKE / "jobs" / "unpacked"))
    return build.build_report(collection, compare.load_baseline(tmp_path / "base"),
                              compare.DEFAULT_THRESHOLDS, Meta(sha=sha))


def macro(lang: str, name: str, *args) -> str:
    module = i18n.environment(lang).get_template("report/_sources.md.j2").module
    return str(getattr(module, name)(*args)).strip()


def test_the_kept_h200_report_matches_its_golden_file(tmp_path):
    text = render.render_comment(h200_report(tmp_path)).text
    golden("h200-unpacked-vs-packed.md", text)


def test_the_kept_h200_report_discloses_dummy_weights_and_synthetic_prompts(tmp_path):
    text = render.render_comment(h200_report(tmp_path)).text
    english, _, chinese = text.partition(i18n.SEPARATOR)
    assert "> ⚠️ dummy weights, synthetic prompts: not comparable to real-model throughput; " \
           "accuracy gate on dummy weights proves nothing." in english
    assert "> ⚠️ 随机权重、合成提示词" in chinese
    assert "host `vm`" in english and "`vllm 0.26.0`" in english
    assert "recipe fingerprint `0dbf27302cfe71e1`" in english


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_disclosure_lines_match_their_golden_file(lang):
    lines = []
    for weights, dataset in (("dummy", "synthetic"), ("dummy", "real"), ("real", "synthetic"),
                             ("real", "real"), ("mixed", "mixed")):
        source = render._source(sources.Source(("h",), "m", weights, dataset, True))
        lines.append(f"{weights}/{dataset}: {macro(lang, 'disclosure', source) or '(none)'}")
    golden(f"disclosure.{lang}.md", "\n".join(lines) + "\n")


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_reproduction_commands_match_their_golden_file(tmp_path, lang):
    report = h200_report(tmp_path, sha=HEAD_SHA)
    view = render.view(report)
    text = "\n\n".join(macro(lang, "reproduce", section) for section in view["recipes"])
    golden(f"reproduce.{lang}.md", text + "\n")


def test_every_point_carries_the_command_that_reproduces_it(tmp_path):
    report = h200_report(tmp_path, sha=HEAD_SHA)
    rows = [row for section in report.recipes for row in section.rows]
    for row in rows:
        assert row.reproduce == (
            f"git -C pr checkout --detach {HEAD_SHA} && recipe-bot run --job "
            f"plan/jobs/{row.job_id}.json --out results/{row.job_id} --repo pr")


@pytest.mark.parametrize("job_file, expected", [
    ("plan/jobs/j.json", "plan/jobs/j.json"),
    ("/abs/j.json", "plan/jobs/j.json"),
    ("../j.json", "plan/jobs/j.json"),
    ("plan/jobs/j.json; rm -rf /", "plan/jobs/j.json"),
], ids=["relative", "absolute", "parent", "shell-text"])
def test_the_job_file_in_a_command_is_a_plain_relative_path(job_file, expected):
    result = synthetic.run_sweep(synthetic.sweep_plan("r", job_id="j"))
    result = result.model_copy(update={"provenance": Provenance(job_file=job_file)})
    job = CollectedJob(result=result, source=None, plan=None)
    assert sources.job_file(job) == expected


def mermaid(text: str) -> str:
    return re.search(r"```mermaid\n(.*?)```", text, re.S).group(1)


def test_the_kept_h200_chart_matches_its_golden_file_and_invents_no_zero(tmp_path):
    report = h200_report(tmp_path)
    text = render.render_comment(report).text
    block = mermaid(text)
    golden("h200-chart.mmd", block)
    made = chart.mermaid_chart(chart.series_from(report))
    measured = max(x for s in chart.series_from(report) for x, _ in s.points)
    assert float(made.x_max) <= measured
    assert all(float(line.values.split(", ")[-1]) > 0 for line in made.lines)


@pytest.mark.parametrize("name", ["passing-sweep", "regression", "points-500"])
def test_no_chart_line_ends_in_an_invented_zero(name):
    scenario = synthetic.SCENARIOS[name]()
    series = chart.series_from(_report_of(scenario))
    made = chart.mermaid_chart(series)
    picked = chart._pick(series)
    assert float(made.x_max) <= min(max(x for x, _ in s.points) for s in picked)
    for line in made.lines:
        assert 0.0 not in [float(v) for v in line.values.split(", ")], line.label


def _report_of(scenario):
    by_id = {job.job_id: job for job in scenario.plan}
    jobs = tuple(CollectedJob(result=r, source=None, plan=by_id.get(r.job_id))
                 for r in scenario.results)
    baseline = compare.Baseline()
    if scenario.baseline:
        samples = {}
        for result in scenario.baseline:
            for case in result.cases:
                for point in case.points:
                    samples.setdefault((result.recipe_fingerprint, point.point_id), []).append(
                        compare.BaseSample(point.metrics, None, result.engine_version, ()))
        baseline = compare.Baseline({k: tuple(v) for k, v in samples.items()})
    return build.build_report(Collection(jobs, True, HEAD_SHA), baseline, compare.DEFAULT_THRESHOLDS,
                              Meta(sha=HEAD_SHA))


@pytest.mark.parametrize("name", ["passing-sweep", "regression", "h200"])
def test_the_base_line_never_says_nothing_is_compared_beside_a_comparison(tmp_path, name):
    # The baseline here records no commit (as the kept H200 results): the summary must still
    # say what was compared, never "nothing is compared".
    report = h200_report(tmp_path) if name == "h200" else _report_of(synthetic.SCENARIOS[name]())
    text = render.render_comment(report).text
    compared = re.findall(r"base from (\d+) run", text)
    assert compared
    assert "nothing is compared" not in text and "不做对比" not in text
    assert "whose commit" in text and "没有记录其提交" in text


def test_the_against_base_counts_add_up_to_the_compared_points(tmp_path):
    report = h200_report(tmp_path)
    text = render.render_comment(report).text
    numbers = re.search(r"[❌✅] (\d+) regressed · ⚡ (\d+) improved · ➖ (\d+) within thresholds"
                        r"(?: · ❔ (\d+) inconclusive)?", text).groups()
    compared = sum(1 for s in report.recipes for r in s.rows if r.comparison is not None)
    assert sum(int(n or 0) for n in numbers) == compared


def e2e_report(provenance):
    job = synthetic.e2e_plan("smoke", ["dp2"], gpus=2)
    result = synthetic.run_e2e(job, accuracy={"dp2": (0.0, 0.0)})
    result = result.model_copy(update={"provenance": provenance})
    collection = Collection((CollectedJob(result=result, source=None, plan=job),), True, HEAD_SHA)
    return build.build_report(collection, compare.Baseline(), compare.DEFAULT_THRESHOLDS,
                              Meta(sha=HEAD_SHA))


@pytest.mark.parametrize("weights, disclosed", [("dummy", True), ("real", False)],
                         ids=["dummy-weights", "real-weights"])
def test_an_accuracy_gate_on_dummy_weights_says_it_proves_nothing(weights, disclosed):
    text = render.render_comment(e2e_report(Provenance(weights=weights, dataset="real"))).text
    english, _, chinese = text.partition(i18n.SEPARATOR)
    assert ("accuracy gate on dummy weights proves nothing" in english) is disclosed
    assert ("用随机权重跑的精度门禁说明不了模型的精度" in chinese) is disclosed


def test_a_verified_checkout_is_said_so_next_to_the_figures(tmp_path):
    job = synthetic.sweep_plan("r")
    result = synthetic.run_sweep(job).model_copy(update={"provenance": Provenance(
        authorized_sha=HEAD_SHA, checkout_sha=HEAD_SHA, sha_checked=True, weights="real",
        dataset="synthetic")})
    collection = Collection((CollectedJob(result=result, source=None, plan=job),), True, HEAD_SHA)
    report = build.build_report(collection, compare.Baseline(), compare.DEFAULT_THRESHOLDS,
                                Meta(sha=HEAD_SHA))
    text = render.render_comment(report).text
    assert "checkout verified against the authorized SHA" in text
    assert "检出的提交已与批准的 SHA 核对" in text
