"""Counters and a latency summary for /metrics, in Prometheus' text exposition format."""
from __future__ import annotations

import threading
from collections import Counter


class Metrics:
    """Thread-safe: HTTP threads count answers; outcomes and latencies are read from the queue, where the
    workers (in this process or another) record them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.responses: Counter[tuple[str, int]] = Counter()  # (event, status)

    def response(self, event: str, status: int) -> None:
        with self._lock:
            self.responses[(event, status)] += 1

    def render(self, queue_counts: dict[str, int], outcomes: list[tuple[str, str, int, float, float]]) -> str:
        """`outcomes`: DeliveryQueue.outcomes, (event, done|failed, count, seconds' sum, max), since start."""
        handled = {(event, "ok" if state == "done" else "failed"): n for event, state, n, _, _ in outcomes}
        latency_sum = sum(total for *_, total, _ in outcomes)
        latency_count = sum(n for _, _, n, _, _ in outcomes)
        latency_max = max((slowest for *_, slowest in outcomes), default=0.0)
        with self._lock:
            lines = ["# HELP recipe_bot_webhook_deliveries_total Webhook deliveries answered, by event and status.",
                     "# TYPE recipe_bot_webhook_deliveries_total counter"]
            lines += [f'recipe_bot_webhook_deliveries_total{{event="{e}",status="{s}"}} {n}'
                      for (e, s), n in sorted(self.responses.items())]
            lines += ["# HELP recipe_bot_deliveries_handled_total Deliveries handed to the handler, by outcome.",
                      "# TYPE recipe_bot_deliveries_handled_total counter"]
            lines += [f'recipe_bot_deliveries_handled_total{{event="{e}",outcome="{o}"}} {n}'
                      for (e, o), n in sorted(handled.items())]
            failures = sum(n for (_, o), n in handled.items() if o == "failed")
            lines += ["# HELP recipe_bot_delivery_failures_total Deliveries whose handling failed.",
                      "# TYPE recipe_bot_delivery_failures_total counter",
                      f"recipe_bot_delivery_failures_total {failures}",
                      "# HELP recipe_bot_delivery_latency_seconds Receipt to end of handling.",
                      "# TYPE recipe_bot_delivery_latency_seconds summary",
                      f"recipe_bot_delivery_latency_seconds_sum {latency_sum:.6f}",
                      f"recipe_bot_delivery_latency_seconds_count {latency_count}",
                      "# HELP recipe_bot_delivery_latency_seconds_max Slowest delivery so far.",
                      "# TYPE recipe_bot_delivery_latency_seconds_max gauge",
                      f"recipe_bot_delivery_latency_seconds_max {latency_max:.6f}",
                      "# HELP recipe_bot_queue_deliveries Deliveries in the durable queue, by state.",
                      "# TYPE recipe_bot_queue_deliveries gauge"]
            lines += [f'recipe_bot_queue_deliveries{{state="{s}"}} {n}' for s, n in sorted(queue_counts.items())]
        return "\n".join(lines) + "\n"
