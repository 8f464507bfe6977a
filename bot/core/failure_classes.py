"""Why a job or case failed: infrastructure (retry it once) or recipe (call its author), one table.

Every rule is a row of RULES: an id, a class, the patterns that recognise it in the failure's
reason, Slurm fields and server log tail, and a sentence (a catalogue message). The first rule
that matches wins, so infrastructure evidence (a node set down, an Xid, a full disk) outranks
the symptom it causes (a server that exited). A failure no rule recognises is a recipe failure:
never retrying the unknown is the cautious side, and `/rerun failed` stays for people.

Pure functions only: the runner annotates result.json with them, the report reads them back
(and classifies older results that carry no class).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from bot.core.messages import Message, msg
from bot.core.results import JOINED, FailureClass
from bot.core.stage_markers import parse_infra_record

if TYPE_CHECKING:
    from bot.core.results import CaseResult, JobResult

Kind = Literal["infrastructure", "recipe"]
INFRASTRUCTURE: Kind = "infrastructure"
RECIPE: Kind = "recipe"
EVIDENCE_LINES = 3  # the last matching lines kept as the evidence
LINE_WIDTH = 300


@dataclass(frozen=True)
class Rule:
    id: str
    kind: Kind
    patterns: tuple[str, ...]
    sentence: Message  # what the failure was, in every language
    # None: always; False: only when no server of the job became ready; True: only after one did.
    after_start: bool | None = None

    def matches(self, line: str) -> bool:
        return any(re.search(p, line) for p in self.patterns)


def _rx(*patterns: str) -> tuple[str, ...]:
    return tuple(f"(?i){p}" for p in patterns)


RULES: tuple[Rule, ...] = (
    # ---- infrastructure: the host, the cluster or the network; retried once automatically ----
    Rule("runner-lost", INFRASTRUCTURE, _rx(
        r"no result\.json came back", r"runner has received a shutdown signal",
        r"lost communication with the server", r"lost contact with slurmctld",
        r"the runner was stopped \(SIGTERM"),
        msg("the runner was lost or stopped by the platform before it reported")),
    # The runner wrote a result.json no one can read: the job's machinery broke, whatever the recipe did.
    Rule("result-unreadable", INFRASTRUCTURE, _rx(r"is not a valid result: "),
         msg("the job's result.json could not be read (not UTF-8, not JSON, or not the result's shape)")),
    # A job cancelled by recipe-bot (/cancel, a push) carries its reason and gets no class; one
    # that the cluster or an operator cancelled is the platform's doing.
    Rule("cancelled-by-platform", INFRASTRUCTURE, _rx(
        r"scancel by an operator or the cluster", r"The operation was canceled\.$"),
        msg("the platform cancelled the job (not recipe-bot, not a person's /cancel)")),
    Rule("slurm-node-failure", INFRASTRUCTURE, _rx(
        r"\bNODE_FAIL\b", r"Slurm node \S+ failed or was set down", r"DUE TO NODE FAILURE",
        r"\bBOOT_FAIL\b", r"node failed to boot", r"Kill task failed"),
        msg("the Slurm node failed or was set down under the job")),
    Rule("slurm-preempted", INFRASTRUCTURE, _rx(
        r"\bPREEMPTED\b", r"was preempted", r"DUE TO PREEMPTION"),
        msg("the scheduler preempted the job")),
    Rule("timeout-before-start", INFRASTRUCTURE, _rx(
        r"still pending .* past its deadline", r"hit its time limit", r"DUE TO TIME LIMIT",
        r"job timeout of \S+ s reached"),
        msg("the job ran out of time before any server was ready"), after_start=False),
    Rule("port-busy", INFRASTRUCTURE, _rx(
        r"port \d+ is already in use before the case started", r"Address already in use",
        r"\bEADDRINUSE\b"),
        msg("a port the case needs was taken before it started")),
    Rule("device-busy", INFRASTRUCTURE, _rx(
        r"devices? (?:is|are) busy or unavailable", r"GPUs are busy before it started",
        r"Free memory on device .* is less than desired GPU memory utilization"),
        msg("a GPU was busy with another process before the start")),
    Rule("out-of-disk", INFRASTRUCTURE, _rx(
        r"No space left on device", r"\bENOSPC\b", r"Disk quota exceeded"),
        msg("the host ran out of disk")),
    Rule("gpu-error", INFRASTRUCTURE, _rx(
        r"NVRM: Xid", r"\bXid\b.{0,20}\b\d{1,3}\b", r"fallen off the bus",
        r"uncorrectable ECC error", r"NVML(?:Error)?[_ :].*(?:Unknown Error|GPU is lost)",
        r"Failed to initialize NVML", r"GPU is lost"),
        msg("the GPU reported a hardware or driver error (Xid, ECC, NVML)")),
    Rule("nccl-init-timeout", INFRASTRUCTURE, _rx(
        r"NCCL.*(?:timed? ?out|Timeout)", r"Watchdog caught collective operation timeout",
        r"DistStoreError: .*Timed out", r"ncclSystemError", r"NCCL error.*unhandled system error"),
        msg("NCCL could not initialise its communicators in time")),
    # A model or repository that does not exist is the recipe's mistake, not the network's.
    Rule("model-not-found", RECIPE, _rx(
        r"RepositoryNotFoundError", r"is not a local folder and is not a valid model identifier",
        r"GatedRepoError"),
        msg("the model the recipe names cannot be found or is gated")),
    Rule("download-failure", INFRASTRUCTURE, _rx(
        r"Max retries exceeded with url", r"Temporary failure in name resolution",
        r"couldn't connect to 'https://huggingface\.co'", r"(?:ReadTimeout|ConnectTimeout)Error",
        r"huggingface\.co.*(?:Connection reset by peer|timed out)", r"\b50[234] Server Error", r"HfHubHTTPError",
        r"manifest unknown|pull access denied|failed to pull image|error pulling image",
        r"GSM8K data is not available on this runner"),
        msg("a download (model, dataset or image) failed")),
    Rule("slurm-unavailable", INFRASTRUCTURE, _rx(
        r"cannot submit to Slurm", r"Unable to contact slurm controller",
        r"Requested node configuration is not available", r"Socket timed out on send/recv"),
        msg("the Slurm cluster could not take the job")),
    Rule("checkout-mismatch", INFRASTRUCTURE, _rx(r"checkout is at \S+, but the job was authorized for"),
         msg("the runner checked out another commit than the authorized one")),
    # ---- recipe: what the PR's recipe asked for; never retried automatically ----
    Rule("bad-arguments", RECIPE, _rx(
        r"error: unrecognized arguments", r"error: argument \S+", r"invalid choice:",
        r"unexpected keyword argument", r"error: the following arguments are required",
        r"exec format error|No such file or directory: '[^']*(?:serve|launch)",
        r"Invalid (?:partition|account|qos)"),
        msg("the server refused its arguments and exited")),
    Rule("server-exited-at-start", RECIPE, _rx(r"exited with code -?\d+ before it was ready",
                                               r"could not start: "),
         msg("the server exited before it was ready")),
    Rule("not-ready", RECIPE, _rx(r"was not ready after \d+ s"),
         msg("the server started cleanly but never became ready")),
    Rule("timeout-after-start", RECIPE, _rx(
        r"hit its time limit", r"DUE TO TIME LIMIT", r"job timeout of \S+ s reached"),
        msg("the job ran out of time after its server was ready"),
        after_start=True),
    Rule("server-died", RECIPE, _rx(r"exited with code -?\d+ (?:during|after|before teardown)"),
         msg("the server died while it was serving")),
    Rule("accuracy", RECIPE, _rx(r"is below the threshold"),
         msg("accuracy below the threshold")),
    Rule("client-error", RECIPE, _rx(
        r"requests? failed", r"no request completed", r"wrote no result file",
        r"(?:vllm bench serve|sglang\.bench_serving|bench_serving) exited with code"),
        msg("the benchmark client's requests failed")),
    Rule("teardown", RECIPE, _rx(r"forced SIGKILL", r"still alive after SIGKILL",
                                 r"left the server's process group", r"cleanup proof failed",
                                 r"SIGKILL escalation"),
         msg("the server did not stop cleanly")),
    Rule("regression", RECIPE, _rx(r"regressed beyond"),
         msg("a point regressed beyond its threshold")),
)
UNCLASSIFIED = Rule("unclassified", RECIPE, (), msg("no rule recognised this failure"))
BY_ID = {rule.id: rule for rule in (*RULES, UNCLASSIFIED)}


def rule(rule_id: str) -> Rule:
    return BY_ID.get(rule_id, UNCLASSIFIED)


def _parts(value: object) -> list[Message | str]:
    """A reason's causes: a catalogue message stays one (its evidence line is then shown in each
    language) unless its English has several lines or causes; text is split as it reads."""
    if isinstance(value, Message):
        if value.id == JOINED:
            params = dict(value.params)
            return [*_parts(params["first"]), *_parts(params["rest"])]
        text = str(value)
        if "\n" not in text and "; " not in text:
            return [value] if text.strip() else []
        value = text
    return [value] if value else []


def _lines(texts: Iterable[object]) -> list[Message | str]:
    """Each cause of the texts, the rules matching its English (a message's str())."""
    lines: list[Message | str] = []
    for cause in (part for value in texts for part in _parts(value)):
        if isinstance(cause, Message):
            lines.append(cause)
            continue
        text = str(cause)
        if text:
            # A reason joins several causes with "; ": each is its own line of evidence.
            lines += [part.strip() for raw in text.splitlines() for part in raw.split("; ")
                      if part.strip()]
    return lines


def _clipped(line: Message | str) -> Message | str:
    """An evidence line at most LINE_WIDTH long: a longer message is kept as its clipped English."""
    return line if isinstance(line, Message) and len(str(line)) <= LINE_WIDTH else str(line)[:LINE_WIDTH]


def classify_lines(lines: list[Message | str], *, started: bool) -> FailureClass:
    """The first rule (in table order) that any line matches, with its last matching lines."""

    for candidate in RULES:
        if candidate.after_start is not None and candidate.after_start != started:
            continue
        hits = [line for line in lines if candidate.matches(str(line))]
        if hits:
            return FailureClass(kind=candidate.kind, rule=candidate.id,
                                evidence=[_clipped(h) for h in hits[-EVIDENCE_LINES:]])
    return FailureClass(kind=RECIPE, rule=UNCLASSIFIED.id,
                        evidence=[_clipped(line) for line in lines[-EVIDENCE_LINES:]])


def _case_failed(case: CaseResult) -> bool:
    return case.status == "failed" or (case.cleanup is not None and not case.cleanup.clean)


CANCELLED = re.compile(r"^cancelled by SIG[A-Z]+")  # bot/runner/budget.py: the runner got SIGTERM/SIGINT


def classify_case(case: CaseResult) -> FailureClass | None:
    """A failed case's class from its reason and server log tail; None when it did not fail or was
    cancelled (a cancel is no one's failure: the job reads `cancelled`)."""
    if not _case_failed(case) or CANCELLED.match(str(case.reason or "")):
        return None
    reason = case.reason or ("cleanup proof failed" if case.cleanup is not None else None)
    return classify_lines(_lines([reason, case.log_tail]), started=case.startup_s is not None)


def _slurm_lines(result: JobResult) -> list[str]:
    slurm = result.slurm
    if slurm is None:
        return []
    return _lines([f"Slurm job {slurm.job_id} state {slurm.state}"
                   + (f" on {slurm.node}" if slurm.node else ""), slurm.reason])


def _own_reason(result: JobResult) -> str | None:
    """The job's reason without what it repeats from a case ("case X: ...", "the run reported:
    ..."): the cases are classified one by one, so that a recipe case is never hidden."""
    reason = str(result.reason or "").split("; the run reported: ", 1)[0]
    if result.cases and reason.startswith("case "):
        return None
    return reason or None


def classify_job(result: JobResult) -> FailureClass | None:
    """A failed or lost job's class. Infrastructure evidence at the job level (lost runner,
    Slurm node, time limit before start) wins; otherwise a recipe failure in any case makes the
    job a recipe failure (a retry would fail again), then an infrastructure one an
    infrastructure failure. Passed and skipped jobs get none, and so do cancelled ones unless
    the platform cancelled them."""
    started = any(c.startup_s is not None for c in result.cases)
    job_lines = _slurm_lines(result) + _lines([_own_reason(result)])
    if result.status == "cancelled":
        found = classify_lines(job_lines, started=started)
        return found if found.rule == "cancelled-by-platform" else None
    if result.status not in ("failed", "lost"):
        return None
    top = classify_lines(job_lines, started=started) if job_lines else None
    if top is not None and top.kind == INFRASTRUCTURE:
        return top
    cases = [c.failure or classify_case(c) for c in result.cases]
    cases = [c for c in cases if c is not None]
    for kind in (RECIPE, INFRASTRUCTURE):
        found = next((c for c in cases if c.kind == kind and c.rule != UNCLASSIFIED.id), None)
        if found is not None:
            return found
    if top is not None and top.rule != UNCLASSIFIED.id:
        return top
    return cases[0] if cases else top or classify_lines([], started=started)


def annotate(result: JobResult) -> JobResult:
    """The result with `failure` set on every failed case and on the job, where not set yet."""
    cases = [case if case.failure is not None or not _case_failed(case)
             else case.model_copy(update={"failure": classify_case(case)})
             for case in result.cases]
    result = result.model_copy(update={"cases": cases})
    if result.failure is None:
        result = result.model_copy(update={"failure": classify_job(result)})
    return result


def should_retry(result: JobResult) -> bool:
    """Exactly one automatic retry: an infrastructure failure of a first attempt."""
    failure = result.failure or classify_job(result)
    return result.attempt == 1 and failure is not None and failure.kind == INFRASTRUCTURE


def merged_record(bodies: Iterable[str]) -> dict[str, int]:
    """Infrastructure failures per host over the bot's report comments, oldest first: the last
    report of each head SHA counts (a later comment for the same SHA repeats the earlier one's
    failures), and the SHAs add up."""
    latest: dict[str, dict[str, int]] = {}
    for body in bodies:
        record = parse_infra_record(body)
        if record:
            sha = re.search(r"\bsha=(\S+)", body.split("\n", 1)[0])
            latest[sha.group(1) if sha else ""] = record
    total: dict[str, int] = {}
    for record in latest.values():
        for host, count in record.items():
            total[host] = total.get(host, 0) + count
    return dict(sorted(total.items(), key=lambda item: (-item[1], item[0])))
