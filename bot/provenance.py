"""Where a job's figures come from, read from the job alone: real or dummy weights, real or
synthetic data. Pure: the runner records it in result.json, the report falls back to the plan."""
from __future__ import annotations

from bot.jobs import Job

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


def dataset_of(job: Job) -> str:
    """synthetic: random prompts; real: a trace or GSM8K; mixed: both; none: neither."""
    kinds = {"synthetic" if point.dataset == "random" else "real"
             for case in job.cases for point in case.points}
    kinds |= {"real" for case in job.cases if case.accuracy is not None}
    if len(kinds) > 1:
        return "mixed"
    return kinds.pop() if kinds else "none"
