"""Replaying InferenceX's real pull requests: recipe-bot's plan beside InferenceX's own process_changelog.py.

    .venv/bin/python bench/replay_inferencex_prs.py --ix-dir CLONE [--main main] [--since 2026-08-01]
        [--newest N] [--pr N ...] [--out FILE] [--jobs 2] [--cache DIR] [--allowed-from base|main]
        [--approve-planners]

CLONE is a local InferenceX clone (bare or not) with its PR heads under refs/pull/N/head (never copied
into this repository). For every PR head whose committer date is on or after --since and whose diff
against its merge-base with --main edits perf-changelog.yaml or configs/:
- recipe-bot: `recipe-bot plan --repo CLONE --base MERGE_BASE --head HEAD --allowed-from DEFAULT --format json`,
  the call gpu.yml makes for a PR. DEFAULT is --main as it is today (--allowed-from main, the default),
  which refuses a runner label that InferenceX renamed after the PR was planned, or the default branch
  as the PR saw it, its merge-base (--allowed-from base), which refuses a label that only the PR adds;
- InferenceX: `utils/process_changelog.py --base-ref MERGE_BASE --head-ref HEAD` run from a `git archive`
  of that head (its own generator, its own master configs), the call its run-sweep workflow makes
  without sweep labels.
Rows are compared as multisets of the exact matrix rows (every field). A refusal on either side plans no
row. Rows recipe-bot holds for a runner label the PR adds to configs/runners.yaml (until its code owner
approves the head: bot/plan/held.py) are planned rows and count; the column "held for a new runner label"
says how many, so the figure stays honest. A head that changes InferenceX's own planner (bot/plan/own_planner.py)
has its rows held until `/approve-planner`: they are the base's tools' rows, counted as planned; with
--approve-planners it is planned as after that approval, by its own tools. GPU-hours on both sides use one cost model (bot/inferencex/launches.py: one launch per row, its
start-up and points, times its GPUs), so the ratio measures rows, not the model. Writes a Markdown
table of every disagreement with its reason (--out, default bench/results/ix_replay.md) and a JSON
record (bench/results/ix_replay.json); prints the agreement figure. InferenceX's output is cached per
(merge-base, head) in --cache: its side never changes between runs.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile
from collections import Counter

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import RESULTS, command_line, machine_info, write_result  # noqa: E402

from bot.core.messages import message_from_data  # noqa: E402
from bot.inferencex.launches import STARTUP_S, point_seconds, row_concurrencies, row_gpus  # noqa: E402
from bot.inferencex.own_tools import changed_tool_files  # noqa: E402
from bot.recipes.sources import GitSource  # noqa: E402

CHANGELOG = "perf-changelog.yaml"
APPROVED_CAP = 10_000  # GPU-hours: the cap of the replay's approvals, above any PR's plan
IX_BUCKETS = ("evals", "agentic_evals", "multinode_evals", "multinode_agentic_evals")


def _git(clone: pathlib.Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(clone), *args], capture_output=True, text=True, check=True).stdout


def candidates(clone: pathlib.Path, main: str, since: str) -> list[dict]:
    """PR heads since `since` that edit the changelog or configs/, newest first."""
    out = _git(clone, "for-each-ref", "refs/pull", "--format=%(refname) %(objectname) %(committerdate:iso-strict)")
    prs = []
    for line in out.splitlines():
        ref, sha, date = line.split(" ", 2)
        if not ref.endswith("/head") or date[:10] < since:
            continue
        try:
            base = _git(clone, "merge-base", main, sha).strip()
        except subprocess.CalledProcessError:
            continue
        changed = _git(clone, "diff", "--name-only", base, sha).split()
        if not any(p == CHANGELOG or p.startswith("configs/") for p in changed):
            continue
        prs.append({"pr": int(ref.split("/")[2]), "head": sha, "base": base, "date": date, "changed": changed})
    return sorted(prs, key=lambda p: (p["date"], p["pr"]), reverse=True)


def row_hours(row: dict) -> float:
    return row_gpus(row) * (STARTUP_S + point_seconds(row) * len(row_concurrencies(row))) / 3600.0


def _canonical(row: dict) -> str:
    return json.dumps(row, sort_keys=True)


def recipe_bot_side(clone: pathlib.Path, pr: dict, allowed_from: str, approve_planner: bool = False) -> dict:
    """`recipe-bot plan` as gpu.yml runs it; `approve_planner`: for a head that changes InferenceX's own
    planner, as after its code owner's `/approve-planner HEAD --max-gpu-hours APPROVED_CAP`."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    planner = changed_tool_files(GitSource(clone, pr["base"]), GitSource(clone, pr["head"]))
    grant = ["--approved-planner", pr["head"], "--planner-max-gpu-hours", str(APPROVED_CAP)] \
        if approve_planner and planner else []
    done = subprocess.run(
        [sys.executable, "-m", "bot", "plan", "--repo", str(clone), "--base", pr["base"], "--head", pr["head"],
         "--allowed-from", allowed_from, "--format", "json", *grant], capture_output=True, text=True, env=env,
        cwd=ROOT)
    try:
        doc = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"rows": [], "error": (done.stderr.strip().splitlines() or ["no output"])[-1], "notes": [],
                "planner": planner}
    if "errors" in doc:
        first = doc["errors"][0]
        where = (f"{first['file']}:{first['line']}: " if first.get("line") else f"{first['file']}: ") \
            if first.get("file") else ""
        return {"rows": [], "error": f"{where}{message_from_data(first['message'])}", "notes": [], "planner": planner}
    ix = doc.get("inferencex") or {}
    rows = [r for bucket in (ix.get("rows") or {}).values() for r in bucket]
    if ix.get("canary"):
        rows.append(ix["canary"]["row"])
    # rows on a runner label the PR adds wait for its code owner's approval: planned, not yet dispatched; rows
    # of a head whose own planner waits for /approve-planner are the base's tools' rows, held
    held = [entry["row"] for entry in ix.get("held") or []]
    return {"rows": rows + held, "held": len(held), "held_labels": ix.get("held_labels") or [], "error": None,
            "notes": doc.get("notes", []), "gpu_hours": doc["summary"]["gpu_hours"], "planner": planner,
            "planner_approved": bool(grant)}


def _extract(clone: pathlib.Path, rev: str, paths: list[str], tree: str) -> str | None:
    """`git archive REV -- PATHS` into `tree`; the error when the clone cannot give them."""
    archive = subprocess.run(["git", "-C", str(clone), "archive", rev, "--", *paths], capture_output=True)
    if archive.returncode != 0:
        return archive.stderr.decode(errors="replace").strip()[:200]
    subprocess.run(["tar", "-x", "-C", tree], input=archive.stdout, check=True)
    return None


def inferencex_side(clone: pathlib.Path, pr: dict, cache: pathlib.Path, tools: str | None = None) -> dict:
    """InferenceX's rows for a PR head; `tools`: take utils/ (its processor and generator) from this
    revision instead of the head, as a pull_request run on the merge commit has main's tools."""
    cached = cache / f"{pr['base'][:12]}-{pr['head'][:12]}{'-tools-' + tools[:12] if tools else ''}.json"
    if cached.exists():
        return json.loads(cached.read_text())
    with tempfile.TemporaryDirectory(prefix="ix-replay-") as tree:
        # only what process_changelog.py and its generator read: a clone may lack large blobs elsewhere
        error = _extract(clone, pr["head"], ["configs", CHANGELOG] + ([] if tools else ["utils"]), tree) or \
            (_extract(clone, tools, ["utils"], tree) if tools else None)
        if error:
            return {"rows": [], "error": None, "unreadable": error}
        git_dir = _git(clone, "rev-parse", "--absolute-git-dir").strip()
        # its generator runs as `python3`: the same interpreter, which has PyYAML and pydantic
        env = {**os.environ, "GIT_DIR": git_dir, "GIT_WORK_TREE": tree,
               "PATH": f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        done = subprocess.run(
            [sys.executable, "utils/process_changelog.py", "--changelog-file", CHANGELOG,
             "--base-ref", pr["base"], "--head-ref", pr["head"]], capture_output=True, text=True, env=env, cwd=tree)
    if done.returncode != 0:
        lines = [ln.strip() for ln in done.stderr.splitlines() if ln.strip() and "errors.pydantic.dev" not in ln]
        result = {"rows": [], "error": " ".join(lines[-2:])[:300] if lines else f"exit {done.returncode}"}
    else:
        doc = json.loads(done.stdout)
        rows = [r for node in ("single_node", "multi_node") for bucket in doc.get(node, {}).values() for r in bucket]
        rows += [r for bucket in IX_BUCKETS for r in doc.get(bucket, [])]
        result = {"rows": rows, "error": None}
    cache.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(result))
    return result


def _reason(ours: dict, theirs: dict) -> str:
    if ours["error"] and not theirs["error"]:
        return f"recipe-bot refuses: {ours['error']}"
    if theirs["error"] and not ours["error"]:
        return f"InferenceX refuses ({theirs['error']}); recipe-bot plans {len(ours['rows'])} rows"
    mine, its = Counter(map(_canonical, ours["rows"])), Counter(map(_canonical, theirs["rows"]))
    extra, missing = sum((mine - its).values()), sum((its - mine).values())
    keys = sorted({json.loads(r).get("exp-name", "?") for r in (mine - its) | (its - mine)})
    return f"{extra} extra, {missing} missing rows ({', '.join(keys[:4])}{' ...' if len(keys) > 4 else ''})"


def _same_contract(ours: dict, theirs: dict) -> dict:
    """Our rows in the output contract of the InferenceX tools at that head: a head whose
    process_changelog.py predates `recipe-fingerprint` gives rows without it (main's tools add it)."""
    if not theirs["rows"] or any("recipe-fingerprint" in r for r in theirs["rows"]):
        return ours
    rows = [{k: v for k, v in r.items() if k != "recipe-fingerprint"} for r in ours["rows"]]
    return {**ours, "rows": rows}


def compare(pr: dict, ours: dict, theirs: dict) -> dict:
    ours = _same_contract(ours, theirs)
    mine, its = Counter(map(_canonical, ours["rows"])), Counter(map(_canonical, theirs["rows"]))
    ours_h = round(sum(row_hours(r) for r in ours["rows"]), 2)
    theirs_h = round(sum(row_hours(r) for r in theirs["rows"]), 2)
    agree = mine == its
    ratio = 1.0 if ours_h == theirs_h else (round(ours_h / theirs_h, 3) if theirs_h else None)
    return {"pr": pr["pr"], "head": pr["head"][:12], "date": pr["date"][:10], "agree": agree,
            "unreadable": theirs.get("unreadable"),
            "rows_recipe_bot": len(ours["rows"]), "rows_inferencex": len(theirs["rows"]),
            "held_for_new_label": ours.get("held", 0) if not ours.get("planner") else 0,
            "held_labels": ours.get("held_labels", []),
            "planner_files": ours.get("planner", []), "planner_approved": ours.get("planner_approved", False),
            "gpu_hours_recipe_bot": ours_h, "gpu_hours_inferencex": theirs_h, "ratio": ratio,
            "recipe_bot_error": ours["error"], "inferencex_error": theirs["error"],
            "reason": "" if agree else _reason(ours, theirs),
            "notes": [n for n in (str(message_from_data(x)) for x in ours.get("notes", [])) if n.startswith("InferenceX infra")][:3]}


def _agreeing_reason(r: dict) -> str:
    """Why an agreeing head is listed: rows held for a runner label, or a change to InferenceX's own planner."""
    if r.get("planner_files") and r.get("recipe_bot_error") and r.get("inferencex_error"):
        return f"agree: both refuse; changes InferenceX's planner ({', '.join(r['planner_files'])})"
    if r.get("planner_files"):
        how = ("planned by its own tools after /approve-planner" if r.get("planner_approved")
               else "rows held until /approve-planner")
        return f"agree; changes InferenceX's planner ({', '.join(r['planner_files'])}): {how}"
    return "agree; held: " + ", ".join(r["held_labels"])


def markdown(results: list[dict], since: str) -> str:
    agree = sum(r["agree"] for r in results)
    held = [r for r in results if r["agree"] and r["held_for_new_label"]]
    planner = [r for r in results if r.get("planner_files")]
    approved = any(r.get("planner_approved") for r in planner)
    lines = [f"# InferenceX PR replay since {since}", "",
             f"{agree} of {len(results)} PR heads agree on rows ({100 * agree / max(len(results), 1):.1f} %); "
             f"{len(held)} of them hold rows for a new runner label until its code owner approves; "
             f"{len(planner)} change InferenceX's own planner "
             f"({'planned as after /approve-planner' if approved else 'their rows held, not approved'}), "
             f"{sum(r['agree'] for r in planner)} of them agree.", "",
             "| PR | head | rows recipe-bot | held for a new runner label | rows InferenceX | GPU-h recipe-bot | "
             "GPU-h InferenceX | reason |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        if not r["agree"] or r["held_for_new_label"] or r.get("planner_files"):
            reason = (r["reason"] or _agreeing_reason(r)).replace("|", "\\|").replace("\n", " ")
            lines.append(f"| #{r['pr']} | {r['head']} | {r['rows_recipe_bot']} | {r['held_for_new_label']} | "
                         f"{r['rows_inferencex']} | {r['gpu_hours_recipe_bot']} | {r['gpu_hours_inferencex']} | "
                         f"{reason} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ix-dir", required=True, type=pathlib.Path, help="a local InferenceX clone")
    parser.add_argument("--main", default="main", help="the default branch's revision")
    parser.add_argument("--since", default="2026-08-01", help="PR heads committed on or after this date")
    parser.add_argument("--newest", type=int, default=0, help="only the newest N PR heads (0: all)")
    parser.add_argument("--pr", type=int, action="append", default=[], help="only this PR (repeatable)")
    parser.add_argument("--out", type=pathlib.Path, default=RESULTS / "ix_replay.md")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--allowed-from", choices=("base", "main"), default="main",
                        help="the default branch whose runner labels are allowed: the PR's merge-base (as it "
                             "was when the PR was planned) or --main as it is today")
    parser.add_argument("--approve-planners", action="store_true",
                        help="plan each head that changes InferenceX's own planner as after its code owner's "
                             f"/approve-planner (cap {APPROVED_CAP:,} GPU-hours); without it their rows are held")
    parser.add_argument("--cache", type=pathlib.Path,
                        default=pathlib.Path(tempfile.gettempdir()) / "ix-replay-cache")
    args = parser.parse_args()
    clone = args.ix_dir.resolve()
    main_sha = _git(clone, "rev-parse", args.main).strip()
    prs = candidates(clone, main_sha, args.since)
    if args.pr:
        prs = [p for p in prs if p["pr"] in args.pr]
    if args.newest:
        prs = prs[:args.newest]
    # the cache is keyed by the InferenceX tools too: they are read from each head, so the head is the key
    cache = args.cache / hashlib.sha1(str(clone).encode()).hexdigest()[:8]

    def one(pr: dict) -> dict:
        ours = recipe_bot_side(clone, pr, pr["base"] if args.allowed_from == "base" else main_sha,
                               args.approve_planners)
        result = compare(pr, ours, inferencex_side(clone, pr, cache))
        if not result["agree"] and not result.get("unreadable"):
            # is it the tools at that head? InferenceX's own tools of main on the same configs and changelog
            with_main = compare(pr, ours, inferencex_side(clone, pr, cache, tools=main_sha))
            result["agree_with_main_tools"] = with_main["agree"]
            if with_main["agree"]:
                result["reason"] += ("; InferenceX's tools at this head are older than its main's: with main's "
                                     "utils/ on the same configs and changelog the rows agree")
        print(json.dumps({k: result.get(k) for k in ("pr", "agree", "ratio", "reason")}), file=sys.stderr, flush=True)
        return result

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        replayed = list(pool.map(one, prs))
    unreadable = [r for r in replayed if r.get("unreadable")]
    results = [r for r in replayed if not r.get("unreadable")]
    agree = sum(r["agree"] for r in results)
    ratios = [r["ratio"] for r in results if r["ratio"] is not None]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table = markdown(results, args.since)
    if unreadable:
        table += "\nLeft out (the clone cannot give their files): " + ", ".join(
            f"#{r['pr']} ({r['unreadable']})" for r in unreadable) + "\n"
    args.out.write_text(table, encoding="utf-8")
    newest = results[:20]
    summary = {"prs": len(results), "agree": agree, "agree_pct": round(100 * agree / max(len(results), 1), 1),
               "newest_20_agree": sum(r["agree"] for r in newest),
               "gpu_hours_ratio_min": min(ratios, default=None), "gpu_hours_ratio_max": max(ratios, default=None),
               "within_1_1x": sum(1 for r in ratios if 1 / 1.1 <= r <= 1.1), "main": main_sha[:12],
               "agree_with_main_tools": agree + sum(1 for r in results if r.get("agree_with_main_tools")),
               # agree on rows, some of them held until a code owner approves the runner label the PR adds
               "held_for_new_label": sum(1 for r in results if r["agree"] and r["held_for_new_label"]),
               "held_for_new_label_prs": [r["pr"] for r in results if r["held_for_new_label"]],
               "planner_prs": [r["pr"] for r in results if r["planner_files"]],
               "planner_agree": sum(1 for r in results if r["planner_files"] and r["agree"]),
               "approve_planners": args.approve_planners,
               "since": args.since, "allowed_from": args.allowed_from, "unreadable": [(r["pr"], r["unreadable"]) for r in unreadable]}
    write_result("ix_replay", {"command": command_line(), "machine": machine_info(), "summary": summary,
                               "results": results})
    print(f"{agree} of {len(results)} PR heads agree on rows ({summary['agree_pct']} %); newest 20: "
          f"{summary['newest_20_agree']} of {len(newest)}; GPU-hours ratio {summary['gpu_hours_ratio_min']}"
          f"–{summary['gpu_hours_ratio_max']}, {summary['within_1_1x']} of {len(ratios)} within 1.1×; "
          f"{summary['agree_with_main_tools']} agree where the heads' older tools are replaced by main's; "
          f"held for a new runner label: {summary['held_for_new_label']} of the agreeing heads "
          f"({', '.join(f'#{n}' for n in summary['held_for_new_label_prs'])}); "
          f"change InferenceX's own planner: {len(summary['planner_prs'])} "
          f"({'approved' if args.approve_planners else 'held, not approved'}), {summary['planner_agree']} agree; "
          f"table: {args.out}")


if __name__ == "__main__":
    main()
