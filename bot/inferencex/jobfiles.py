"""InferenceX rows as job files and GitHub matrices: what `recipe-bot plan --actions-outputs` adds for them."""
from __future__ import annotations

from bot.inferencex.rowenv import template_file

DEFAULT_LIMIT_S = 6 * 3600.0


def row_job(entry: dict, agentx_fast: bool = False, templates: dict[str, dict] | None = None) -> dict:
    """The job file of one planned row, for `recipe-bot run --job F` (see bot/runner/ix_row.py): with
    the plan's templates, the commit its environment is read at and the secrets the runner supplies."""
    job = {
        "job_id": entry["job_id"], "config_key": entry["recipe"], "runner_label": entry["runner_label"],
        "backend": entry.get("backend") or "local", "timeout_s": float(entry.get("limit_s") or DEFAULT_LIMIT_S),
        "row": entry["row"], "slurm": entry.get("slurm"), "agentx_fast": agentx_fast,
    }
    template = (templates or {}).get(template_file(entry["row"])) if isinstance(entry.get("row"), dict) else None
    if template is not None:
        job["template_commit"] = template.get("commit")
        job["secrets"] = sorted({name for names in (template.get("secrets") or {}).values() for name in names})
    return {"inferencex": job}


def row_outputs(plan: dict, valid_id, to_write: dict[str, dict]  # noqa: ANN001
                ) -> tuple[dict | None, list[tuple[dict, list[dict]]]]:
    """The InferenceX canary entry and each matrix (meta, entries); each row's job file goes into `to_write`."""
    ix = plan.get("inferencex") or {}

    def entry(item: dict) -> dict | None:
        job_id = str(item.get("job_id") or "")
        if not valid_id(job_id) or not isinstance(item.get("row"), dict):
            return None
        to_write[job_id] = row_job(item, bool((plan.get("filters") or {}).get("agentx_fast")))
        return {"job_id": job_id, "runner_label": str(item.get("runner_label") or ""),
                "recipe": str(item.get("recipe") or ""), "backend": item.get("backend") or "local",
                "limit_s": str(item.get("limit_s") or "")}

    canary = entry(ix["canary"]) if ix.get("canary") else None
    matrices = []
    for matrix in ix.get("matrices") or []:
        made = [e for e in (entry(i) for i in matrix.get("include") or []) if e is not None]
        if made:
            meta = {"runner_label": matrix.get("runner_label"), "index": matrix.get("index", 0),
                    "fail_fast": bool(matrix.get("fail_fast"))}
            matrices.append((meta, made))
    return canary, matrices
