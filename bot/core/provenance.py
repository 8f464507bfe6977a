"""Where a job's figures come from, read from the job alone: real or dummy weights, real or
synthetic data. Pure: the runner records it in result.json, the report falls back to the plan."""
from __future__ import annotations

from bot.core.jobs import Job

_DUMMY_FORMATS = {"dummy"}


def weights_of(job: Job) -> str:
    """dummy when any server loads random weights (`--load-format dummy`), else real."""
    for case in job.cases:
        for server in case.servers:
            args = list(server.args)
            for index, arg in enumerate(args):
                value = None
                if arg == "--load-format" and index + 1 < len(args):
                    value = args[index + 1]
                elif arg.startswith("--load-format="):
                    value = arg.split("=", 1)[1]
                if value in _DUMMY_FORMATS:
                    return "dummy"
    return "real"


SAMPLE_DATA = "sample_problems"  # bot/data/sample_problems: recipe-bot's own GSM8K-format problems


def _gate_data(data_path: str | None, sample_gates: bool) -> str:
    named = (data_path or "").rstrip("/").split("/")
    return "sample" if sample_gates or SAMPLE_DATA in named[-2:] else "real"


def dataset_of(job: Job, sample_gates: bool = False) -> str:
    """synthetic: random prompts; real: a trace or GSM8K; sample: recipe-bot's own sample problems
    (not GSM8K: a data_path naming them, or `sample_gates`, what the runner saw them score); mixed:
    more than one; none: neither."""
    kinds = {"synthetic" if point.dataset == "random" else "real"
             for case in job.cases for point in case.points}
    kinds |= {_gate_data(case.accuracy.data_path, sample_gates) for case in job.cases if case.accuracy is not None}
    if len(kinds) > 1:
        return "mixed"
    return kinds.pop() if kinds else "none"
