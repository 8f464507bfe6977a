"""Recorded response surfaces for the search tests and bench: closed-form curves, no engine needed."""
from __future__ import annotations

import math

from bot.runner.search import Measurement


def smooth(c: int) -> Measurement:
    """Throughput saturates (Michaelis-Menten), interactivity falls off smoothly."""
    return Measurement(tput_per_gpu=100 * c / (c + 16), interactivity=50 / (1 + c / 32), ttft_ms=20 + c)


def kv_cliff(c: int) -> Measurement:
    """Throughput rises linearly until the KV cache is full at 96, then preemption cuts it to 40 %."""
    if c <= 96:
        return Measurement(tput_per_gpu=1.2 * c, interactivity=50 / (1 + c / 200), ttft_ms=20 + c)
    return Measurement(tput_per_gpu=1.2 * 96 * 0.4, interactivity=8.0, ttft_ms=20 + 30 * c)


def noisy_plateau(c: int) -> Measurement:
    """A fast-saturating curve with deterministic ±2 % throughput and ±1 % interactivity jitter."""
    jitter = 1 + 0.02 * math.sin(c * 12.9898)
    return Measurement(tput_per_gpu=80 * c / (c + 8) * jitter,
                       interactivity=40 / (1 + c / 64) * (1 + 0.01 * math.cos(c * 7.1)), ttft_ms=10 + c)


def plateau(c: int) -> Measurement:
    """noisy_plateau's curve without its jitter: the knee the jittered ones should keep."""
    return Measurement(tput_per_gpu=80 * c / (c + 8), interactivity=40 / (1 + c / 64), ttft_ms=10 + c)


def rough_plateau(c: int) -> Measurement:
    """The same curve with ±8 % throughput and ±3 % interactivity jitter: one point on a loaded
    2-core CPU (bench/README.md, #25), deterministic."""
    jitter = 1 + 0.08 * math.sin(c * 12.9898)
    return Measurement(tput_per_gpu=80 * c / (c + 8) * jitter,
                       interactivity=40 / (1 + c / 64) * (1 + 0.03 * math.cos(c * 7.1)), ttft_ms=10 + c)


def cpu_engine(c: int) -> Measurement:
    """Shaped like the CPU engine's curves under load (bench/results/search.json, #25): throughput
    still rising slowly at 128, ±15 % throughput and ±6 % interactivity jitter, deterministic."""
    jitter = 1 + 0.15 * math.sin(c * 12.9898)
    return Measurement(tput_per_gpu=16000 * c / (c + 60) * jitter,
                       interactivity=440 / (1 + c / 40) ** 0.9 * (1 + 0.06 * math.cos(c * 7.1)), ttft_ms=10 + c)


SURFACES = {"smooth": smooth, "kv-cliff": kv_cliff, "noisy-plateau": noisy_plateau}
