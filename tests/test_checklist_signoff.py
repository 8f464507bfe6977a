"""Sign-off texts → verdicts: the parser and every rule, table-driven, without GitHub."""
from __future__ import annotations

import dataclasses
import pathlib

import pytest

from bot.checklist import rules
from bot.checklist.diffscan import FileChange
from bot.core.codeowners import CodeownersError, parse_codeowners
from bot.checklist.signoff import find
from bot.checklist.template import TemplateError, load_templates
from bot.core.config import Checklist

ROOT = pathlib.Path(__file__).resolve().parents[1]
EN = (ROOT / "checklists/PR_REVIEW_CHECKLIST.md").read_text(encoding="utf-8")
ZH = (ROOT / "checklists/PR_REVIEW_CHECKLIST_zh.md").read_text(encoding="utf-8")
TEMPLATES = load_templates({"en": ("en.md", EN), "zh": ("zh.md", ZH)}, 1)
HEAD = "a" * 40
CODEOWNERS = "* @acme/core\nrecipes/ @alice @helper-bot @acme/recipes\n"
RECIPE = FileChange("recipes/tiny.yaml", "modified", "@@ -1 +1,2 @@\n name: tiny\n+conc: 8\n")


def signoff(*, lang: str = "en", open_ids: tuple[str, ...] = (), detail: tuple[str, ...] = (),
            signed: str = "alice", version: str = "v1", trigger: str | None = None, drop: tuple[str, ...] = ()) -> str:
    """The shipped template, pasted and filled in the way a reviewer would."""
    text = (EN if lang == "en" else ZH).split("\n---\n", 1)[1]
    lines = []
    for line in text.splitlines():
        if any(f"] {item} " in line for item in drop):
            continue
        if line.startswith("- [ ] ") and not any(f"] {item} " in line for item in open_ids):
            line = "- [x] " + line[6:]
        lines.append(line)
    text = "\n".join(lines).replace("v1)", f"{version})")
    if trigger is not None:
        text = text.replace(text.strip().splitlines()[0], trigger)
    placeholder = "- insert any additional info here" if lang == "en" else "- 在此填写补充信息"
    text = text.replace(placeholder, "\n".join(f"- {d}" for d in detail) or placeholder)
    return text.replace("FILL_IN_GITHUB_USERNAME", signed)


def evidence(body: str, *, author: str = "alice", bot: bool = False, pr_author: str = "carol",
             codeowners: str = CODEOWNERS, teams: tuple = (), benchmark: rules.Benchmark | None = None,
             files: tuple[FileChange, ...] = (RECIPE,), settings: Checklist | None = None) -> rules.Evidence:
    found = find(body, TEMPLATES)
    assert found is not None and found.signoff is not None, found
    owners = parse_codeowners(codeowners, "CODEOWNERS")
    ownership = rules.Ownership("CODEOWNERS", None, tuple((f.filename, *owners.of(f.filename)) for f in files), teams)
    return rules.Evidence(
        pr=7, head_sha=HEAD, author=pr_author, source=rules.Source("comment-1", author, bot), signoff=found.signoff,
        body=body, templates=TEMPLATES, ownership=ownership,
        benchmark=benchmark if benchmark is not None else rules.Benchmark("completed", "success", "passed"),
        files=files, settings=settings or Checklist())


PASS_ALL = {name: "pass" for name in rules.CHECKS} | {"images": "na"}
TEAM_ONLY = "recipes/ @acme/recipes\n"
PATCHED = FileChange("recipes/launch.sh", "added", "@@ -0,0 +1,2 @@\n+cd /opt && git apply /w/fix.patch\n+vllm serve\n")
IMAGE = FileChange("recipes/big.yaml", "added", "@@ -0,0 +1 @@\n+image: quay.io/someone/vllm:latest\n")
GOOD_IMAGE = FileChange("recipes/ok.yaml", "added", "@@ -0,0 +1 @@\n+image: vllm/vllm-openai:v0.9.2\n")

CASES = [
    # name, body, evidence keyword arguments, the checks that differ from PASS_ALL
    ("valid", signoff(), {}, {}),
    ("stale template", signoff(version="v0"), {}, {"template": "fail"}),
    ("trigger without a version", signoff(trigger="As a PR reviewer and CODEOWNER, I have reviewed this and have:"),
     {}, {"template": "fail"}),
    ("an item of the current template is missing", signoff(drop=("C5",)), {}, {"template": "fail"}),
    ("unticked box without explanation", signoff(open_ids=("C5",)), {}, {"boxes": "fail"}),
    ("unticked box explained", signoff(open_ids=("C5",), detail=("C5: no speculative decoding in this PR",)), {}, {}),
    ("ticked box with explanation", signoff(detail=("C2: reviewed with @dave",)), {}, {}),
    ("placeholder is no explanation", signoff(open_ids=("C5",), detail=("insert any additional info here",)), {},
     {"boxes": "fail"}),
    ("signer not a CODEOWNER", signoff(signed="erin"), {"author": "erin"}, {"codeowner": "fail"}),
    ("signer owns through a team", signoff(signed="erin"),
     {"author": "erin", "codeowners": TEAM_ONLY, "teams": (("acme/recipes", "member"),)}, {}),
    ("team the token cannot read", signoff(signed="erin"),
     {"author": "erin", "codeowners": TEAM_ONLY, "teams": (("acme/recipes", "unreadable"),)}, {"codeowner": "fail"}),
    ("wrong Signed: name", signoff(signed="bob"), {}, {"signed": "fail"}),
    ("Signed: left as the placeholder", signoff(signed="FILL_IN_GITHUB_USERNAME"), {}, {"signed": "fail"}),
    ("Chinese template", signoff(lang="zh", open_ids=("C5",), detail=("C5：本 PR 不涉及投机解码",)), {}, {}),
    ("trigger with extra spaces and emphasis",
     signoff(trigger="**As a  PR reviewer and  _CODEOWNER_**,   I have reviewed this and have (PR_REVIEW_CHECKLIST v1):"),
     {}, {}),
    ("trigger in other case", signoff(trigger="as a pr reviewer and codeowner, i have REVIEWED this and have (v1):"),
     {}, {}),
    ("a bot's sign-off", signoff(signed="helper-bot"), {"author": "helper-bot", "bot": True}, {"signer": "fail"}),
    ("the author's own sign-off", signoff(), {"pr_author": "alice"}, {"signer": "fail"}),
    ("the author's own, allowed by config", signoff(), {"pr_author": "alice",
                                                        "settings": Checklist(allow_author_signoff=True)}, {}),
    ("benchmarks skipped", signoff(), {"benchmark": rules.Benchmark("completed", "neutral", "nothing ran")},
     {"benchmarks": "fail"}),
    ("benchmarks failed", signoff(), {"benchmark": rules.Benchmark("completed", "failure", "accuracy")},
     {"benchmarks": "fail"}),
    ("benchmarks still running", signoff(), {"benchmark": rules.Benchmark("in_progress", None)},
     {"benchmarks": "fail"}),
    ("engine patched", signoff(), {"files": (RECIPE, PATCHED)}, {"engine": "fail"}),
    ("engine patched with the waiver linked", signoff(detail=("C7: see [waiver](docs/waiver/7.md)",)),
     {"files": (RECIPE, PATCHED)}, {"engine": "na"}),
    ("image from a registry not allowed", signoff(), {"files": (RECIPE, IMAGE)}, {"images": "fail"}),
    ("image from an allowed registry", signoff(), {"files": (RECIPE, GOOD_IMAGE)}, {"images": "pass"}),
]


@pytest.mark.parametrize("name,body,kwargs,differs", CASES, ids=[c[0] for c in CASES])
def test_signoff_verdicts(name, body, kwargs, differs):
    checks = rules.evaluate(evidence(body, **kwargs))
    assert {c.name: c.status for c in checks} == PASS_ALL | differs
    assert rules.conclusion(checks) == ("failure" if "fail" in differs.values() else "success")


def test_missing_benchmark_verdict_fails():
    ev = dataclasses.replace(evidence(signoff()), benchmark=None)
    assert rules.benchmarks(ev).status == "fail" and rules.benchmarks(ev).reason == "missing"


def test_chinese_signoff_is_read_as_chinese():
    found = find(signoff(lang="zh"), TEMPLATES)
    assert found.signoff.lang == "zh" and found.signoff.signed == "alice"
    assert [ticked for _, ticked in found.signoff.items] == [True] * 8


BAD_BODIES = [
    ("quoted", "> " + signoff().replace("\n", "\n> "), "quoted"),
    ("fenced", "```\n" + signoff() + "\n```", "quoted"),
    ("indented code", "    " + signoff().replace("\n", "\n    "), "quoted"),
    ("two in one comment", signoff() + "\n\n" + signoff(), "two"),
]


@pytest.mark.parametrize("name,body,problem", BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
def test_quoted_or_doubled_signoffs_are_problems_not_signoffs(name, body, problem):
    found = find(body, TEMPLATES)
    assert found is not None and found.signoff is None and found.problem == problem and found.lines


def test_a_comment_without_the_trigger_is_not_an_attempt():
    assert find("LGTM, ship it. Signed: alice", TEMPLATES) is None


def test_a_reply_quoting_a_signoff_above_its_own_is_one_signoff():
    body = "> " + signoff(signed="bob").replace("\n", "\n> ") + "\n\n" + signoff()
    found = find(body, TEMPLATES)
    assert found.signoff is not None and found.signoff.signed == "alice"


CODEOWNERS_ERRORS = [
    ("owner without @", "* @acme/core\nrecipes/ alice\n", 2),
    ("negation", "# owners\n\n!docs/ @alice\n", 3),
    ("character range", "*.md @alice\nrecipes/[ab].yaml @bob\n", 2),
]


@pytest.mark.parametrize("name,text,line", CODEOWNERS_ERRORS, ids=[c[0] for c in CODEOWNERS_ERRORS])
def test_a_codeowners_syntax_error_names_its_line(name, text, line):
    with pytest.raises(CodeownersError) as error:
        parse_codeowners(text, "CODEOWNERS")
    assert error.value.line == line and f"CODEOWNERS:{line}:" in str(error.value)
    assert any("\u4e00" <= ch <= "\u9fff" for ch in error.value.message.render("zh"))


def test_a_codeowners_error_fails_the_codeowner_check_with_the_line():
    ev = evidence(signoff())
    with pytest.raises(CodeownersError) as error:
        parse_codeowners("recipes/ alice\n", "CODEOWNERS")
    check = rules.codeowner(dataclasses.replace(ev, ownership=rules.Ownership("CODEOWNERS", error.value)))
    assert (check.status, check.reason, check.ctx["line"]) == ("fail", "codeowners-error", 1)


def test_last_matching_codeowners_line_wins():
    owners = parse_codeowners("recipes/ @alice\nrecipes/big/ @bob\n", "CODEOWNERS")
    assert owners.of("recipes/big/x.yaml") == (("@bob",), 2)
    assert owners.of("recipes/tiny.yaml") == (("@alice",), 1)


def test_templates_must_carry_the_configured_version():
    with pytest.raises(TemplateError) as error:
        load_templates({"en": ("en.md", EN)}, 2)
    assert "v1" in str(error.value) and "checklist.version: 2" in str(error.value)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

PIECES = st.sampled_from([
    "As a PR reviewer and CODEOWNER, I have reviewed this and have (PR_REVIEW_CHECKLIST v1):", "- [x] C1 ok",
    "- [ ] C2", "### Additional detail", "- C2: because", "Signed: @alice", "签名：bob", "> ", "```", "    ",
    "**", "_", "\n", "\n\n", "[x]", "C9:", "（PR_REVIEW_CHECKLIST v2）：", "<!-- x -->", "|",
])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(PIECES, st.text(max_size=20)), max_size=30))
def test_any_comment_text_gives_an_answer_not_a_crash(parts):
    found = find("".join(parts), TEMPLATES)
    assert found is None or (found.signoff is None) == (found.problem is not None)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_codeowners_text_parses_or_names_a_line(text):
    try:
        parse_codeowners(text, "CODEOWNERS").of("recipes/tiny.yaml")
    except CodeownersError as error:
        assert 1 <= error.line <= max(1, len(text.splitlines()))


from bot.core.config import ConfigError, load_config  # noqa: E402

CONFIG_ERRORS = [
    ("registry with a scheme", "checklist:\n  allowed_registries: [https://quay.io]\n", 2, "checklist.allowed_registries.0"),
    ("waiver without {pr}", "checklist:\n  waiver: docs/waiver.md\n", 2, "checklist.waiver"),
    ("version zero", "checklist:\n  version: 0\n", 2, "checklist.version"),
    ("unknown key", "checklist:\n  templates: x.md\n", 2, "checklist.templates"),
]


@pytest.mark.parametrize("name,text,line,field", CONFIG_ERRORS, ids=[c[0] for c in CONFIG_ERRORS])
def test_a_bad_checklist_config_names_its_line_and_field(name, text, line, field):
    with pytest.raises(ConfigError) as error:
        load_config(text)
    assert (error.value.line, error.value.field) == (line, field)


def test_the_signoff_is_off_without_a_checklist_section_and_on_with_defaults():
    assert load_config("bot_login: x[bot]\n").checklist is None
    assert load_config("checklist: {}\n").checklist == Checklist()


ENGINE_LINES = {
    # name: (added line, the kind found or None)
    "sed -i into site-packages": ("sed -i 's/a/b/' /usr/lib/python3/site-packages/vllm/x.py", "site-packages"),
    "perl -pi into dist-packages": ("perl -pi -e 's/a/b/' $P/dist-packages/vllm/x.py", "site-packages"),
    "a flag run ending in i, site-packages right after": ("sed -isite-packages", "site-packages"),
    "copy into site-packages": ("cp fix.py /opt/venv/lib/site-packages/vllm/", "site-packages"),
    "append into dist-packages": ("echo x >> /usr/dist-packages/vllm/__init__.py", "site-packages"),
    "site-packages only read": ("python -c 'import site; print(site.getsitepackages())' # site-packages", None),
    "sed without -i": ("sed 's/a/b/' site-packages/x", None),
    "git apply": ("cd /opt && git apply fix.patch", "git-apply"),
    "patch -p1": ("patch -p1 < fix.diff", "patch-command"),
    "monkey-patch": ("vllm.engine.step = my_step", "monkey-patch"),
    "a comparison is no assignment": ("assert vllm.__version__ == '0.9'", None),
}


@pytest.mark.parametrize("line, kind", ENGINE_LINES.values(), ids=ENGINE_LINES.keys())
def test_engine_patch_rules_find_what_they_should(line, kind):
    from bot.checklist import diffscan

    found = diffscan.engine_patches([FileChange("run.sh", "added", f"@@ -0,0 +1 @@\n+{line}\n")])
    assert [f.kind for f in found] == ([kind] if kind else [])


@pytest.mark.parametrize("line", [
    ">" * 50_000, "sed -i " * 7_000, "cp " * 17_000, " " * 50_000 + "image", "- " + " " * 50_000 + "image",
], ids=["redirects", "in-place-edits", "copies", "spaces-before-image", "dash-then-spaces"])
def test_a_long_line_in_a_pr_is_scanned_in_one_pass(line):
    # A PR's own text: the rules backtracked over every pair of its characters (a line of 20,000 `>` took
    # 2.4 s, 20,000 spaces before `image` 5.7 s). Each is one pass now; nothing here is a finding.
    from bot.checklist import diffscan

    change = FileChange("run.sh", "added", f"@@ -0,0 +1 @@\n+{line}\n")
    assert diffscan.engine_patches([change]) == [] and diffscan.images([change]) == []
