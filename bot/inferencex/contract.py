"""The rows InferenceX's workflow receives: its processor's output contract (defaults filled, None dropped)."""
from __future__ import annotations

_WORKER_DEFAULTS = {"pp": 1, "dcp-size": 1, "pcp-size": 1, "additional-settings": []}


def _worker(worker: dict) -> dict:
    out = {**worker}
    for key, value in _WORKER_DEFAULTS.items():
        out.setdefault(key, list(value) if isinstance(value, list) else value)
    return {k: v for k, v in out.items() if v is not None}


def matrix_row(row: dict) -> dict:
    """A row as `process_changelog.py` prints it after `ChangelogMatrixEntry` validation
    (`model_dump(by_alias=True, exclude_none=True)`): fixed-seq-len rows gain `eval-only: false`, multi-node
    fixed-seq-len rows also `eval-all-concs: false`, every worker its parallelism defaults and
    `additional-settings: []`; agentic rows keep their optional fields absent."""
    out = {k: v for k, v in row.items() if v is not None}
    agentic = out.get("scenario-type") == "agentic-coding"
    multinode = "prefill" in out
    if not agentic:
        out.setdefault("eval-only", False)
        if multinode:
            out.setdefault("eval-all-concs", False)
    if multinode:
        out["prefill"], out["decode"] = _worker(out["prefill"]), _worker(out["decode"])
    return out
