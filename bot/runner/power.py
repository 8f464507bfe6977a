"""GPU power of a case's GPUs, sampled through NVML while its points run, judged per point by InferenceX's rule.

The sampler is InferenceX's `start_gpu_monitor` (benchmarks/benchmark_lib.sh: `nvidia-smi
--query-gpu=timestamp,index,power.draw,... -l 1` into gpu_metrics.csv, and one more sample after the
benchmark so the window's end is bracketed) done through NVML in a background thread, for the case's GPUs
only: one row per GPU every INTERVAL_S, `timestamp, index, power.draw [W]`, the columns InferenceX's
aggregate_power.py reads. Each point's raw result names its window (bot/runner/rawfile.py); the points'
power fields and validity are InferenceX's (bot/runner/power_rule.py), with its validation sidecar beside
the raw file. Without NVML or GPUs there is no telemetry: the fields are written all the same, with
`power_valid` 0 and the reason.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path

from bot.core.messages import Message, msg
from bot.core.results import PointResult, PowerResult
from bot.runner.hardware import nvml, nvml_handles
from bot.runner.metrics import load_raw
from bot.runner.power_rule import judge

INTERVAL_S = 1.0  # start_gpu_monitor's default interval; InferenceX's rule allows gaps up to 3 s
HEADER = "timestamp, index, power.draw [W]\n"


class PowerSampler:
    """NVML power of `gpus` (CUDA_VISIBLE_DEVICES entries) into `csv_path`, every `interval_s`, while in use."""

    def __init__(self, gpus: Sequence[str], csv_path: Path, interval_s: float = INTERVAL_S,
                 clock: Callable[[], float] = time.time) -> None:
        self.gpus, self.csv_path, self.interval_s, self.clock = list(gpus), csv_path, interval_s, clock
        self.problem: Message | None = None  # why nothing was sampled
        self._stack = ExitStack()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._handles: list = []
        self._lib = None
        self._file = None

    def __enter__(self) -> "PowerSampler":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        lib = self._stack.enter_context(nvml())
        found = nvml_handles(lib, self.gpus) if lib is not None and self.gpus else None
        if not found:
            self.problem = (msg("no NVML on this host") if lib is None else msg("the case uses no GPU")
                            if not self.gpus else msg("NVML knows none of the case's GPUs"))
            self._stack.close()
            return
        self._lib, self._handles = lib, found
        self.csv_path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.csv_path.open("w", encoding="utf-8")
        self._file.write(HEADER)
        self._sample()  # the window's start is bracketed from the first moment
        self._thread = threading.Thread(target=self._run, name="power-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self) -> None:
        stamp = self.clock()
        rows = []
        for index, handle in self._handles:
            try:
                watts = f"{self._lib.nvmlDeviceGetPowerUsage(handle) / 1000.0:.2f} W"  # NVML reads milliwatts
            except Exception:  # noqa: BLE001 - a GPU that cannot say: [N/A], which the rule counts as invalid
                watts = "[N/A]"
            rows.append(f"{stamp:.3f}, {index}, {watts}\n")
        self._file.write("".join(rows))
        self._file.flush()  # a runner that dies mid-case leaves every sample taken so far

    def stop(self) -> None:
        """Stop sampling after one last sample (InferenceX's post-exit sample: the last window's end bracketed)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self._sample()
        if self._file is not None:
            self._file.close()
            self._file = None
        self._stack.close()


def point_power(point: PointResult, sampler: PowerSampler, out_dir: Path) -> PointResult:
    """The point with InferenceX's power fields in its metrics and how they were judged; unchanged without figures."""
    if point.metrics is None or point.raw_result_file is None:
        return point
    raw_path = out_dir / point.raw_result_file
    try:
        bench = load_raw(raw_path)
    except ValueError:
        return point
    expected = len(sampler.gpus) or None
    verdict = judge(sampler.csv_path, bench, expected, bench_path=str(raw_path))
    validation = raw_path.with_name(f"power_validation_{raw_path.stem}.json")
    validation.write_text(json.dumps(verdict.validation, indent=2) + "\n")
    total_power = verdict.fields.get("avg_total_gpu_power_w")
    power = PowerResult(
        valid=verdict.valid, reasons=verdict.reasons, problem=sampler.problem, interval_s=sampler.interval_s,
        gpus=sampler.gpus, validation_file=str(validation.relative_to(out_dir)),
        telemetry_file=str(sampler.csv_path.relative_to(out_dir)) if sampler.csv_path.is_file() else None,
        tokens_per_joule=round(point.metrics.total_token_throughput / total_power, 6)
        if verdict.valid and total_power else None)
    metrics = point.metrics.model_copy(update={"inferencex": {**point.metrics.inferencex, **verdict.fields}})
    return point.model_copy(update={"metrics": metrics, "power": power})


def with_power(points: list[PointResult], sampler: PowerSampler, out_dir: Path) -> list[PointResult]:
    return [point_power(p, sampler, out_dir) for p in points]
