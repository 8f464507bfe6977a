"""InferenceX rows that ran through the repository's benchmark templates, read back as the report's results.

The templates upload each row's `agg_<RESULT_FILENAME>.json` as the artifact `bmk_<RESULT_FILENAME>`; the
report job downloads every `bmk_*` artifact as InferenceX's collect-results.yml does (`pattern`, then every
`*.json` under the folder, utils/collect_results.py's `rglob`), and this step turns each planned template
row into a `result.json` the report reads: passed with the agg file's figures, or failed when no agg file
came back (the template's job failed or was cancelled; its log is on the run page).
"""
from __future__ import annotations

import json
from pathlib import Path

import click

from bot.core.cli_guard import HELP_OPTIONS
from bot.core.messages import bilingual, msg
from bot.core.results import CaseResult, JobResult, PointMetrics, PointResult
from bot.inferencex.rowenv import template_env
from bot.inferencex.rowkeys import server_digest
from bot.inferencex.templates import KIND_MULTI, KIND_SINGLE

_RUNNER = "\x00runner\x00"  # where the template puts `runner.name`, unknown until a runner takes the job
_QUANTILES = ("mean", "median", "p90", "p99")


def template_rows(plan: dict) -> list[dict]:
    """The plan's InferenceX rows that a template runs (the canary first)."""
    ix = plan.get("inferencex") or {}
    entries = [ix["canary"]] if ix.get("canary") else []
    entries += [e for m in ix.get("matrices") or [] for e in m.get("include") or []]
    return [e for e in entries if e.get("backend") in (KIND_SINGLE, KIND_MULTI) and isinstance(e.get("row"), dict)]


def agg_files(bmk_dir: Path) -> dict[str, dict]:
    """Every JSON document under the downloaded `bmk_*` folders, by file name (collect_results.py's rglob)."""
    found: dict[str, dict] = {}
    for path in sorted(bmk_dir.rglob("*.json")) if bmk_dir.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(data, dict):
            found[path.name] = data
    return found


def matching(entry: dict, files: dict[str, dict]) -> list[tuple[str, dict]]:
    """The agg files of one row: `agg_<RESULT_FILENAME>.json` (multi-node: `agg_<RESULT_FILENAME>_*.json`), with
    any runner's name where the template puts `runner.name`."""
    head, tail = template_env(entry["row"], _RUNNER)["RESULT_FILENAME"].split(_RUNNER, 1)
    multi = entry.get("backend") == KIND_MULTI
    found = []
    for name, data in files.items():
        if not (name.startswith(f"agg_{head}") and name.endswith(".json")):
            continue
        rest = name[len(f"agg_{head}"):-len(".json")]
        if tail:  # the recipe fingerprint's suffix follows the runner's name
            at = rest.find(tail)
            runner, after = (rest[:at], rest[at + len(tail):]) if at > 0 else ("", "")
            if not runner or not (after == "" or (multi and after.startswith("_"))):
                continue
        elif not rest:
            continue
        found.append((name, data))
    return found


def _ms(agg: dict, name: str) -> dict[str, float]:
    return {q: float(agg[f"{q}_{name}"]) * 1000.0 for q in _QUANTILES
            if isinstance(agg.get(f"{q}_{name}"), (int, float))}


def point_from_agg(name: str, agg: dict, gpus: int) -> PointResult:
    """One point from the template's agg file: process_result.py's per-GPU figures and latencies (seconds)."""
    per = max(1, gpus)
    intvty = agg.get("median_intvty")
    metrics = PointMetrics(
        completed=0, failed=0, duration_s=0.0, request_throughput=0.0,
        output_throughput=float(agg["output_tput_per_gpu"]) * per,
        total_token_throughput=float(agg["tput_per_gpu"]) * per,
        tput_per_gpu=float(agg["tput_per_gpu"]), output_tput_per_gpu=float(agg["output_tput_per_gpu"]),
        input_tput_per_gpu=float(agg["input_tput_per_gpu"]),
        interactivity=float(intvty) if isinstance(intvty, (int, float)) else None,
        ttft_ms=_ms(agg, "ttft"), tpot_ms=_ms(agg, "tpot"), itl_ms=_ms(agg, "itl"), e2el_ms=_ms(agg, "e2el"),
        inferencex={k: float(v) for k, v in agg.items() if isinstance(v, (int, float)) and not isinstance(v, bool)},
    )
    return PointResult(point_id=f"c{agg['conc']}", concurrency=int(agg["conc"]), isl=agg.get("isl"),
                       osl=agg.get("osl"), status="passed", metrics=metrics, raw_result_file=name)


def _failed(base: dict, recipe: str, reason: str) -> JobResult:
    return JobResult(**base, status="failed", reason=reason,
                     cases=[CaseResult(name=recipe, status="failed", reason=reason)])


def row_result(entry: dict, files: dict[str, dict], sha: str | None, command: str | None) -> JobResult:
    """One template row's result: its agg files' points, or failed naming the artifact that did not come back."""
    row = entry["row"]
    env = template_env(row, _RUNNER)
    gpus = int(env.get("GPU_COUNT") or 0) or int(row.get("tp") or 0)
    template = "benchmark-multinode-tmpl.yml" if entry.get("backend") == KIND_MULTI else "benchmark-tmpl.yml"
    base = dict(job_id=entry["job_id"], kind="sweep", recipe=entry["recipe"],
                recipe_fingerprint=row.get("recipe-fingerprint") or server_digest(row),
                runner_label=entry["runner_label"], gpus=gpus, engine=row.get("framework"), sha=sha,
                command=command, inferencex={"row": row, "template": template})
    found = matching(entry, files)
    if not found:
        return _failed(base, entry["recipe"], (
            f"no bmk_ artifact with agg_{env['RESULT_FILENAME'].replace(_RUNNER, '<runner>')}.json came back from "
            f"{template}: its job failed, was cancelled or never started (see the run's page)"))
    try:
        points = [point_from_agg(name, agg, gpus) for name, agg in found]
    except (KeyError, TypeError, ValueError) as exc:
        return _failed(base, entry["recipe"], f"the template's agg file {found[0][0]} is not process_result.py's: "
                                              f"{exc}")
    base["inferencex"] = {**base["inferencex"], "agg": [agg for _, agg in found],
                          "agg_files": [name for name, _ in found]}
    return JobResult(**base, status="passed", server_launches=1,
                     cases=[CaseResult(name=entry["recipe"], status="passed", points=points)])


@click.command("template-results", context_settings=HELP_OPTIONS)
@click.argument("bmk_dir", type=click.Path(file_okay=False, path_type=Path))
@click.argument("plan_json", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--sha", default=None, help="The commit the rows measured (the authorized head).")
@click.option("--command", "command", default=None, help="The command that asked for them.")
def template_results_cmd(bmk_dir: Path, plan_json: Path, results_dir: Path, sha: str | None,
                         command: str | None) -> None:
    """Write RESULTS_DIR/<job_id>/result.json for every InferenceX row a benchmark template ran (BMK_DIR: the
    downloaded bmk_* artifacts)."""
    try:
        plan = json.loads(plan_json.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        click.echo(bilingual(msg("%(path)s: not a readable plan: %(reason)s", path=str(plan_json), reason=str(exc))),
                   err=True)
        raise SystemExit(2) from None
    files = agg_files(bmk_dir)
    for entry in template_rows(plan if isinstance(plan, dict) else {}):
        result = row_result(entry, files, sha, command)
        out = results_dir / entry["job_id"]
        out.mkdir(parents=True, exist_ok=True)
        (out / "result.json").write_text(result.model_dump_json(indent=1) + "\n", encoding="utf-8")
        points = len(result.cases[0].points) if result.cases else 0
        click.echo(f"{entry['job_id']}: {result.status} ({points} point(s) from {bmk_dir})", err=True)
