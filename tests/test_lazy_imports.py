"""Heavy libraries load only on the paths that use them: what `recipe-bot handle` and `report` import up front."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def loaded_after(code: str, probes: list[str]) -> list[str]:
    """Which of `probes` a fresh interpreter has in sys.modules after running `code`."""
    script = f"{code}\nimport json, sys, types\n" \
             f"print(json.dumps([m for m in {probes!r} if type(sys.modules.get(m)) is types.ModuleType]))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# (what runs, modules it must not have loaded); every event goes through the first line.
CASES = {
    "handle-imports": ("import bot.cli, bot.control.handle",
                       ["matplotlib", "numpy", "jwt", "cryptography", "bot.plan", "bot.recipes", "bot.report",
                        "bot.checklist.verify", "bot.results", "bot.jobs",
                        # PyGithub's object classes and App auth (github/__init__): the client needs its Requester
                        "github.MainClass", "github.Repository", "github.Auth", "nacl"]),
    "no-warmup-without-gpu-work": ("from types import SimpleNamespace as E\nfrom bot.control import commands, warmup\n"
                                   "ok = E(on_pull=True, draft_hint=False, association='OWNER')\n"
                                   "assert warmup.start_for(commands.parse_comment('/status').commands, ok) is None\n"
                                   "for e in (E(on_pull=True, draft_hint=False, association='NONE'),\n"
                                   "          E(on_pull=True, draft_hint=True, association='OWNER'),\n"
                                   "          E(on_pull=False, draft_hint=False, association='OWNER')):\n"
                                   "    assert warmup.start_for(commands.parse_comment('/sweep').commands, e) is None",
                                   ["bot.plan", "jinja2"]),
    "plain-command-parsed": ("from bot.control import commands\nassert commands.parse_comment('/sweep').commands\n"
                             "assert not commands.parse_comment('Looks good to me.').commands", ["markdown_it"]),
    "report-imports": ("import bot.report.cli", ["matplotlib", "numpy", "jinja2"]),
    "report-reads-results": (
        "import pathlib, tempfile\n"
        "from bot.report import build, collect, compare\nfrom tests import synthetic\n"
        "from bot.report.model import Meta\n"
        "d = pathlib.Path(tempfile.mkdtemp())\n"
        "paths = synthetic.materialize(synthetic.many_points(20), d)\n"
        "c = collect.collect(paths['results'], collect.load_plan(paths['plan']))\n"
        "build.build_report(c, compare.load_baseline(paths['baseline']), compare.thresholds_from(None), Meta())",
        ["matplotlib", "numpy"]),
    # An InferenceX-only repository planned as JSON: configs pass the quick check, no pydantic model is built.
    "inferencex-plan-json": (
        "from click.testing import CliRunner\n"
        "from bot.cli import main\n"
        "done = CliRunner().invoke(main, ['plan', '--repo', 'tests/fixtures/inferencex', '--format', 'json'])\n"
        "assert done.exit_code == 0, done.output",
        ["pydantic", "rich", "jinja2", "bot.jobs", "bot.recipes.schema", "bot.inferencex.schema", "subprocess"]),
}


@pytest.mark.parametrize("name", CASES)
def test_a_path_does_not_import_what_it_does_not_use(name: str) -> None:
    code, absent = CASES[name]
    assert loaded_after(code, absent) == []


# Negative cases: the probe sees a module that is loaded, and a stand-in becomes the real module on use.
NEGATIVE = {
    "numpy-imported-directly": ("import numpy", ["numpy"], ["numpy"]),
    "jwt-used-after-handle": ("import bot.control.handle, jwt\njwt.encode({'a': 1}, 'k' * 32, algorithm='HS256')",
                              ["jwt", "cryptography"], ["jwt", "cryptography"]),
    "pygithub-used-after-handle": (
        "import bot.control.handle\nfrom github import Auth, Github\n"
        "assert Github(auth=Auth.Token('t'), base_url='http://127.0.0.1:9').requester is not None",
        ["github.MainClass", "github.Auth"], ["github.MainClass", "github.Auth"]),
    "gpu-command-warmed-up": ("from types import SimpleNamespace as E\nfrom bot.control import commands, warmup\n"
                              "e = E(on_pull=True, draft_hint=False, association='COLLABORATOR')\n"
                              "w = warmup.start_for(commands.parse_comment('/sweep').commands, e)\nw.join()\n"
                              "assert w.failed is None", ["jinja2", "bot.plan.planner", "bot.recipes.catalog"],
                              ["jinja2", "bot.plan.planner", "bot.recipes.catalog"]),
    "pygithub-first-used-by-two-threads": (
        "import threading, bot.github\nseen = []\n"
        "def use():\n    import github\n    seen.append(github.Github)\n"
        "threads = [threading.Thread(target=use) for _ in range(4)]\n"
        "[t.start() for t in threads]\n[t.join() for t in threads]\n"
        "assert len(seen) == 4 and len({id(c) for c in seen}) == 1",
        ["github.MainClass"], ["github.MainClass"]),
    "markdown-comment-parsed": ("from bot.control import commands\n"
                                "assert not commands.parse_comment('> /sweep').commands", ["markdown_it"], ["markdown_it"]),
    "per-request-data-resampled": (
        "from bot.report import noise\n"
        "from bot.results import RequestSamples\n"
        "n = [float(i % 17 + 1) for i in range(200)]\n"
        "runs = [RequestSamples(ttft_ms=n, tpot_ms=n, e2el_ms=n, input_tokens=[8] * 200, output_tokens=[8] * 200)]\n"
        "assert noise.bootstrap([noise.Wanted('ttft_p99', False, 1.0)], runs, runs)",
        ["numpy"], ["numpy"]),
}


@pytest.mark.parametrize("name", NEGATIVE)
def test_a_module_in_use_is_seen_loaded(name: str) -> None:
    code, probes, expected = NEGATIVE[name]
    assert loaded_after(code, probes) == expected


def test_a_warmup_import_that_fails_is_recorded_and_left_to_the_handler() -> None:
    from bot.control import warmup

    w = warmup.Warmup(("bot.no_such_module_for_the_test", "json"))
    w.join()
    assert w.failed is not None and w.failed.startswith("bot.no_such_module_for_the_test:")
