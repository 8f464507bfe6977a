"""Every string the bot writes has its Chinese form, in the terms of docs/glossary.md."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from bot.core import i18n
from bot.plan.render import errors_markdown, plan_markdown
from bot.recipes.errors import RecipeProblem
from message_scan import sample

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "docs" / "glossary.md"
# Where the planner builds the messages a user reads that still have a Chinese pattern.
# Where every message is a catalogue entry (tests/test_catalogue.py checks their translations).
CATALOGUE_SOURCES = [*sorted((ROOT / "bot" / "recipes").glob("*.py")),
                     *sorted((ROOT / "bot" / "inferencex").glob("*.py")), *sorted((ROOT / "bot" / "plan").glob("*.py")),
                     ROOT / "bot" / "runner" / "environment.py", ROOT / "bot" / "runner" / "engines.py"]
CJK = re.compile(r"[\u4e00-\u9fff]")


def glossary_terms() -> dict[str, str]:
    """English → 简体中文, from the first table of docs/glossary.md."""
    text = GLOSSARY.read_text(encoding="utf-8").split("## Terms kept in English")[0]
    rows = re.findall(r"^\| ([^|]+?) \| ([^|]+?) \|", text, re.M)
    return {en: zh for en, zh in rows if en not in ("English", "---")}


def written_messages(sources: list[Path]) -> list[tuple[str, str]]:
    """(where, message) for every message literal the planner and the loader raise, note or record."""
    found: list[tuple[str, str]] = []
    for path in sources:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "missing"
                                                  for k in node.keys):  # the loader's _FRIENDLY table
                found += [(f"{path.name}:{node.lineno}", v.value) for v in node.values if isinstance(v, ast.Constant)]
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            owner = func.value if isinstance(func, ast.Attribute) else None
            arg = None
            if name in ("ValueError", "PlanError", "EnvironmentProblem", "Invalid", "AppendOnlyError",
                        "ClickException", "Refusal") and node.args:
                arg = node.args[0]
            elif name in ("single", "RecipeProblem") and len(node.args) >= 4:
                arg = node.args[3]
            elif name in ("append", "insert") and isinstance(owner, ast.Attribute) and owner.attr == "notes":
                arg = node.args[-1]
            elif name == "append" and isinstance(owner, ast.Name) and owner.id == "found" \
                    and isinstance(node.args[0], ast.Tuple):  # rule_violations: (loc, message)
                arg = node.args[0].elts[1]
            elif name == "add" and isinstance(owner, ast.Name) and owner.id == "touched" and len(node.args) == 2:
                arg = node.args[1]
            text = sample(arg) if arg is not None else None
            if text and text.strip():
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", text))
    return found


def test_the_recipe_inferencex_plan_and_runner_messages_are_catalogue_messages():
    """No English text to be matched back into Chinese: each problem, refusal and rule is a msg() id."""
    assert written_messages(CATALOGUE_SOURCES) == []
    source = (ROOT / "bot" / "recipes" / "schema.py").read_text(encoding="utf-8")
    assert "raise Invalid(msg(" in source and "raise ValueError(" not in source  # the scan looks where they are


# Where the planner and the runner say why (a note, a touched reason, a refusal, why a case failed):
# each is a catalogue message, so no English text may reach them (pybabel extracts the msg() ids).
CATALOGUE_ONLY = [*sorted((ROOT / "bot" / "plan").glob("*.py")), *sorted((ROOT / "bot" / "runner").rglob("*.py")),
                  *sorted((ROOT / "bot" / "engines").glob("*.py"))]
# Text that stays English on purpose: what checks the committed GPU runs (tests/test_gpu_runs.py, no
# reader but a maintainer) and an InferenceX row's run, which speaks as InferenceX's own workflow does.
KEPT_ENGLISH = {"bot/runner/evidence.py", "bot/runner/ix_row.py"}
RAISED = {"PlanError", "EnvironmentProblem", "GSM8KUnavailable", "JobFileError"}
APPENDED_TO = {"notes", "failures", "problems", "reasons"}


def english_built_messages(source: str, where: str) -> list[str]:
    """`where:line: text` for each English literal or f-string handed to a refusal, a note or a reason."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        owner = func.value if isinstance(func, ast.Attribute) else None
        owner_name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        if name in RAISED or (name in ("append", "insert", "add") and owner_name in APPENDED_TO | {"touched"}):
            text = sample(node.args[-1])
            if text:
                found.append(f"{where}:{node.lineno}: {text}")
    return found


def test_the_planner_and_the_runner_give_their_reasons_as_catalogue_messages():
    found = [line for path in CATALOGUE_ONLY if str(path.relative_to(ROOT)) not in KEPT_ENGLISH
             for line in english_built_messages(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert found == []


def test_the_catalogue_scan_finds_an_english_note_a_reason_and_a_refusal():
    source = ('plan.notes.append(f"{name}: changed")\nfailures.append("it broke")\n'
              'raise PlanError("no such recipe")\nplan.notes.append(msg("recipe changed"))\n')
    assert english_built_messages(source, "x.py") == ["x.py:1: X: changed", "x.py:2: it broke",
                                                      "x.py:3: no such recipe"]


def test_joined_touched_reasons_read_in_chinese_each_in_its_own_words():
    from bot.core.messages import msg
    from bot.core.results import joined

    reason = joined([msg("recipe changed"), msg("include %(file)s changed", file="recipes/_base/a.yaml")])
    assert str(reason) == "recipe changed; include recipes/_base/a.yaml changed"
    assert reason.render("zh") == "配方有改动；include 的 recipes/_base/a.yaml 有改动"


def test_the_chinese_half_of_a_report_gives_a_runners_reason_in_chinese(tmp_path):
    from bot.report import render
    from tests import synthetic
    from bot.report import build, collect, compare
    from bot.report.model import Meta

    from bot.runner.environment import EnvironmentProblem, check_required

    job = synthetic.e2e_plan("afd", ["a"])
    with pytest.raises(EnvironmentProblem) as refused:  # the reason as the runner writes it
        check_required(["AFD_GPU_E2E_MODEL"], {})
    reason = refused.value.args[0]
    result = synthetic.run_e2e(job, accuracy={"a": (0.8, 0.8)})
    result = result.model_copy(update={"status": "failed", "reason": reason, "cases": [
        c.model_copy(update={"status": "failed", "reason": reason, "accuracy": None}) for c in result.cases]})
    synthetic.write_results(tmp_path / "results", [result])
    (tmp_path / "base").mkdir()
    report = build.build_report(collect.collect(tmp_path / "results", [job], synthetic.HEAD_SHA),
                                compare.load_baseline(tmp_path / "base"), compare.thresholds_from(None),
                                Meta(sha=synthetic.HEAD_SHA))
    english, _, chinese = render.render_comment(report).text.partition(i18n.SEPARATOR)
    assert "opt-in and fails rather than skips" in english
    assert "未设置必需的环境变量 AFD_GPU_E2E_MODEL：这个用例需要显式开启" in chinese
    assert "fails rather than skips" not in chinese


def _prose(source: str) -> str:
    """Template text a reader sees: no Jinja tags, no code spans, no identifiers."""
    text = re.sub(r"\{[{%#].*?[}%#]\}", " ", source, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    return re.sub(r"[\w.-]*[_.\-\[\]/][\w.\-\[\]/]*", " ", text)


def _english_terms_left(text: str) -> list[str]:
    terms = [en for en, zh in glossary_terms().items() if en != zh]
    return [en for en in terms if re.search(rf"(?<![\w-]){re.escape(en)}(?![\w-])", text, re.I)]


def test_the_glossary_has_the_core_terms():
    terms = glossary_terms()
    assert terms["recipe"] == "配方" and terms["arm"] == "搜索分支" and terms["point"] == "测试点"
    assert terms["commit"] == "提交" and terms["job"] == "作业"


def test_the_chinese_catalog_uses_the_glossary_not_the_english_words():
    from babel.messages.pofile import read_po

    from bot.core import catalogue

    with catalogue.catalog_path("zh").open("rb") as source:
        entries = [entry for entry in read_po(source) if entry.id]
    left = {}
    for entry in entries:
        for text in entry.string if isinstance(entry.string, tuple) else (entry.string,):
            terms = _english_terms_left(_prose(re.sub(r"%\(\w+\)[sd]", " ", text)))
            if terms:
                left[entry.id if isinstance(entry.id, str) else entry.id[0]] = terms
    assert left == {}


def test_the_chinese_half_of_a_recipe_error_has_no_english_detail():
    from bot.core.messages import msg

    problem = RecipeProblem("recipes/a.yaml", 7, "concurrency",
                            msg("concurrency values must be from 1 to %(limit)s (got %(value)s)", limit=100000, value=0))
    english, chinese = errors_markdown([problem]).split(i18n.SEPARATOR)
    assert "concurrency values must be from 1 to 100000 (got 0)" in english
    assert "并发值必须在 1 到 100000 之间（实际为 0）" in chinese and "must be" not in chinese


def test_the_chinese_half_of_a_plan_has_its_notes_in_chinese(tmp_path):
    from bot.plan.planner import plan_change

    plan = plan_change(ROOT, filters=None)
    chinese = plan_markdown(plan).split(i18n.SEPARATOR)[1]
    assert "没有基准版本：规划了目录中的全部配方" in chinese
    assert "no base revision" not in chinese and "runs first" not in chinese


def test_the_command_registry_speaks_the_glossary_in_chinese():
    from bot.core.commands import REGISTRY

    for name, spec in REGISTRY.items():
        chinese = spec.summary.render("zh")
        assert CJK.search(chinese), name
        assert _english_terms_left(_prose(chinese)) == [], f"/{name}: {chinese}"
