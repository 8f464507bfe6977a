"""GSM8K-N with K shots against a running server's /v1/completions, scored as lm-eval scores it."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from bot.core.jobs import AccuracySpec
from bot.core.messages import Message, msg
from bot.core.results import AccuracyResult
from bot.runner import gsm8k
from bot.runner.server import InferenceServer

CONCURRENCY = 8
ATTEMPTS = 3  # lm-eval's API models retry a failed request too
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class Completion:
    text: str | None
    error: str | None = None


def complete(base_url: str, model: str, prompt: str, max_tokens: int, timeout_s: float
             ) -> Completion:
    """One greedy completion with lm-eval's local-completions payload. Never raises."""
    payload = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
               "stop": list(gsm8k.STOP_SEQUENCES), "seed": gsm8k.FEWSHOT_SEED}
    request = urllib.request.Request(
        base_url + "/v1/completions", data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    error = "not sent"
    for attempt in range(ATTEMPTS):
        try:
            with _HTTP.open(request, timeout=timeout_s) as response:
                body = json.loads(response.read())
            return Completion(text=body["choices"][0]["text"])
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode(errors="replace")
            return Completion(None, f"HTTP {exc.code}: {detail}")  # the server refused: no retry
        except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            error = f"{type(exc).__name__}: {exc}"
            time.sleep(0.5 * (attempt + 1))
    return Completion(None, error)


@dataclass(frozen=True)
class AccuracyOutcome:
    result: AccuracyResult
    reason: Message | None  # why the gate failed, None when it passed


def run_gsm8k(spec: AccuracySpec, *, base_url: str, model: str, case_dir: Path, out_dir: Path,
              repo: Path, servers: Sequence[InferenceServer], tick: Callable[[Message], None],
              remaining_s: Callable[[], float], gsm8k_dir: Path | None = None) -> AccuracyOutcome:
    data_path = None
    if spec.data_path:
        data_path = Path(spec.data_path)
        data_path = data_path if data_path.is_absolute() else repo / data_path
    test_docs, train_docs, source = gsm8k.load_docs(data_path, spec.num_shots, gsm8k_dir)
    docs = test_docs[:spec.num_samples]
    prompts = gsm8k.build_prompts(docs, train_docs, spec.num_shots)
    completions: dict[int, Completion] = {}
    pool = ThreadPoolExecutor(max_workers=CONCURRENCY)
    timeout = max(1.0, min(600.0, remaining_s()))
    futures = {pool.submit(complete, base_url, model, prompt, spec.max_tokens, timeout): i
               for i, prompt in enumerate(prompts)}
    pending = set(futures)
    try:
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for future in done:
                completions[futures[future]] = future.result()
            for server in servers:
                server.check_alive(msg("during the GSM8K evaluation"))
            tick(msg("running GSM8K"))
    finally:
        # Do not wait for requests still in flight: teardown comes next and ends them.
        pool.shutdown(wait=False, cancel_futures=True)
    if any(c.text is None for c in completions.values()):
        # Requests that failed may be the server crashing: its process may still be exiting.
        for server in servers:
            if server.base_url == base_url:
                server.check_alive_settled(msg("during the GSM8K evaluation"))

    samples, strict_hits, flexible_hits, errors = [], 0, 0, []
    for i, doc in enumerate(docs):
        completion = completions[i]
        sample = {"doc_id": i, "question": doc.question, "target": doc.answer,
                  "response": completion.text, "error": completion.error}
        if completion.text is None:
            errors.append(completion.error)
        else:
            scored = gsm8k.score(completion.text, doc)
            strict_hits += scored.strict_correct
            flexible_hits += scored.flexible_correct
            sample.update({"strict_match": scored.strict_extracted,
                           "strict_correct": scored.strict_correct,
                           "flexible_extract": scored.flexible_extracted,
                           "flexible_correct": scored.flexible_correct})
        samples.append(sample)
    count = len(docs)
    strict = strict_hits / count if count else 0.0
    flexible = flexible_hits / count if count else 0.0
    measured = strict if spec.metric == "strict-match" else flexible

    samples_file = case_dir / "gsm8k.json"
    samples_file.write_text(json.dumps({
        "task": "gsm8k", "source": source, "num_fewshot": spec.num_shots,
        "fewshot_seed": gsm8k.FEWSHOT_SEED, "stop": gsm8k.STOP_SEQUENCES,
        "max_tokens": spec.max_tokens, "first_prompt": prompts[0] if prompts else None,
        "samples": samples}, indent=1, ensure_ascii=False))

    reason = None
    if count < spec.num_samples:
        reason = msg("GSM8K data has only %(count)s of the %(asked)s samples asked for (source: %(source)s)",
                     count=count, asked=spec.num_samples, source=source)
    elif errors:
        reason = msg("%(failed)s of %(count)s GSM8K requests failed (first: %(first)s)", failed=len(errors),
                     count=count, first=errors[0])
    elif measured < spec.threshold:
        reason = msg("GSM8K %(metric)s %(measured)s is below the threshold %(threshold)s (%(count)s samples, "
                     "%(shots)s shots)", metric=spec.metric, measured=f"{measured:.4f}",
                     threshold=f"{spec.threshold:.4f}", count=count, shots=spec.num_shots)
    result = AccuracyResult(
        task="gsm8k", num_samples=count, num_shots=spec.num_shots, strict_match=strict,
        flexible_extract=flexible, metric=spec.metric, threshold=spec.threshold,
        passed=reason is None, samples_file=str(samples_file.relative_to(out_dir)), source=source,
        gsm8k=not gsm8k.is_sample(source))
    return AccuracyOutcome(result, reason)
