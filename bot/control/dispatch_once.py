"""Exactly one GPU run per request, through lost answers, redeliveries, crashes and parallel handlers.

The request key (a comment id, `label-<name>` at a SHA) travels with the run in its title
(markers.RUN_TITLE), so whether a dispatch happened can always be asked of GitHub. Before
dispatching, a handler writes a *claim* comment (markers.claim_marker) and reads every comment
back: only the oldest claim of a key may dispatch, so two handlers of one event at once start one
run. The claim is also the acknowledgement recorded before the dispatch: a handler killed after it
leaves the claim behind, and the next delivery resumes it: it looks for the key's run and
dispatches only when there is none, then turns the claim into the reply. A claim names the Actions
run of the handler that wrote it; a later handler resumes it only once that run is over (or is an
earlier attempt of its own run), so it never races a holder that is still working. A failed dispatch whose
answer was lost (5xx, time-out) is never repeated blindly: the key's run is looked for instead.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import os
import secrets
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from bot.control.client import ClaimClient, CommentsClient, DispatchClient, RunsClient
from bot.core import i18n, markers
from bot.core.config import CONFIG_PATH
from bot.core.github import BotLoginMismatch, DispatchedRun, GitHubError, Run
from bot.core.markers import MARKER_PREFIX, written_by
from bot.core.messages import msg

if TYPE_CHECKING:  # the handler imports this module; these are its annotations only
    from bot.core.commands import ParsedComment
    from bot.core.events import CommentEvent, Pull
    from bot.control.handler import Handler
    from bot.control.reply import Reply

# Runs are listed newest first; a run of a claim cannot be older than the claim (clocks aside).
CLOCK_SLACK = dt.timedelta(minutes=10)


@dataclasses.dataclass
class Started:
    run: DispatchedRun | None = None
    claim_id: int | None = None  # the comment to turn into the reply
    dispatched_now: bool = False  # False: the run already existed (a resumed request)
    lost: bool = False  # another handler holds the request's claim: say nothing, do nothing
    held: bool = False  # before_dispatch() said no (a budget): the claim becomes the reply, nothing runs
    log: list[str] = dataclasses.field(default_factory=list)

    def lose(self, line: str) -> None:
        """Another handler's claim of the request came first: this one says and does nothing."""
        self.lost = True
        self.log.append(line)

    def keep(self, run: DispatchedRun) -> None:
        """Two resumers raced past the claim: the request's run is the oldest one."""
        self.run = run


class HeadMoved(Exception):
    def __init__(self, authorized_sha: str, head_sha: str, state: str = "open"):
        super().__init__(f"head moved from {authorized_sha} to {head_sha}")
        self.authorized_sha, self.head_sha, self.state = authorized_sha, head_sha, state
        self.claim_id: int | None = None  # set when a claim comment was written for the request


def dispatch_inputs(*, pr: int, sha: str, command: str, requester: str, key: str,
                    gpu_hours: float | None = None, runner_labels: tuple[str, ...] = (),
                    planner: markers.PlannerApproval | None = None) -> dict[str, str]:
    """The GPU workflow's inputs (all strings, as workflow_dispatch takes them). `runner_labels`: the labels
    the head adds to configs/runners.yaml that their code owner approved for `sha`; `planner`: the approval
    of the head's own InferenceX planner (each sent only when there is one, so a GPU workflow without the
    input keeps working until it is needed)."""
    inputs = {"pr": str(pr), "sha": sha, "command": command, "requester": requester, "comment_id": key,
              "gpu_hours": "" if gpu_hours is None else f"{gpu_hours:.2f}"}
    if runner_labels:
        inputs["runner_labels"] = ",".join(runner_labels)
    if planner is not None and planner.sha == sha:
        inputs["planner_sha"] = planner.sha
        inputs["planner_max_gpu_hours"] = f"{planner.max_gpu_hours:g}"
    return inputs


def dispatch(client: DispatchClient, *, workflow: str, default_branch: str, pr: int, authorized_sha: str,
             command: str, requester: str, key: str, gpu_hours: float | None = None,
             runner_labels: tuple[str, ...] = (), planner: markers.PlannerApproval | None = None) -> DispatchedRun:
    """Re-read the PR head right before dispatching; refuse if it moved since authorization.

    The workflow runs from the default branch (never the PR's, so a PR cannot change what runs
    with the bot's privileges) and receives the head SHA to check out and plan from.
    """
    pull = client.get_pull(pr)
    if pull.head_sha != authorized_sha or pull.closed:
        raise HeadMoved(authorized_sha, pull.head_sha, pull.state)
    inputs = dispatch_inputs(pr=pr, sha=authorized_sha, command=command, requester=requester, key=key,
                             gpu_hours=gpu_hours, runner_labels=runner_labels, planner=planner)
    return client.dispatch_workflow(workflow, ref=default_branch, inputs=inputs)


def find_runs(client: RunsClient, workflow: str, pr: int, key: str, sha: str | None = None,
              since: dt.datetime | None = None, *, bot_login: str, default_branch: str) -> list[Run]:
    """The request's runs that the bot started (every page down to `since`), oldest first: a run a
    writer dispatched with the same title is neither taken for the request's run nor kept over it."""
    found = []
    for run in client.iter_workflow_runs(workflow, since=since):
        title = markers.parse_run_title(run.display_title)
        if title and title.pr == pr and title.key == key and (sha is None or title.sha == sha) and \
                markers.started_by_bot(run, bot_login=bot_login, default_branch=default_branch, workflow=workflow):
            found.append(run)
    return sorted(found, key=lambda r: r.id)


def start(client: ClaimClient, *, workflow: str, default_branch: str, pr: int, sha: str, command: str,
          requester: str, key: str, bot_login: str, ledger: markers.Ledger, claim_body: Callable[[str], str],
          per_sha: bool, started_at: dt.datetime, holder: str | None = None, taken: Taken | None = None,
          recheck_head: bool = True, before_dispatch: Callable[[list[markers.Claim]], bool] | None = None,
          gpu_hours: float | None = None, runs: Callable[[], Iterable[Run]] | None = None,
          runner_labels: tuple[str, ...] = (), planner: markers.PlannerApproval | None = None) -> Started:
    """Claim, look, dispatch at most once, look again. Raises HeadMoved and GitHubError.

    `per_sha`: the key may run once per head SHA (a label), not once in all (a comment).
    `claim_body(marker)`: the claim comment's text, with the marker as its first line.
    `started_at`: when the handler read the ledger (every comment); later claims are read back by time.
    `holder`: this handler's Actions run, `<run id>.<attempt>` (default: from GITHUB_RUN_ID/_ATTEMPT).
    `taken`: the claim claim_first() already took (or resumes) for this request.
    `before_dispatch(older)`: asked once the request is this handler's and has no run yet, with the other
    requests' claims written before this one's and still undecided (each may start GPU work, so the limits
    count them); False holds it.
    `gpu_hours`: the request's estimate, recorded in its claim and in the run (its title).
    `runs()`: the GPU workflow's runs (every page), when the caller lists them anyway: a fresh claim's key
    is looked for among them, as a resumed one's is, since a deleted reply must not let a key run twice.
    `runner_labels`, `planner`: the new runner labels and the head's own planner approved for `sha`
    (dispatch_inputs).
    `recheck_head`: read the PR again right before dispatching (always without `taken`: a label's payload
    may be minutes old; a comment's handler read the PR itself).
    """
    out = Started()
    holder = this_run() if holder is None else holder
    match_sha = sha if per_sha else None
    if taken is not None and (taken.claim is None or taken.claim.key != key):
        taken = None  # claim_first() took another request's claim (a budget approval starts waiting ones)
    recheck_head = recheck_head and taken is None  # a comment's handler read the PR itself
    if client.dry_run:  # nothing is written, so there is nothing to claim or to find
        if before_dispatch is not None and not before_dispatch([]):
            out.held = True
            return out
        out.run = dispatch(client, workflow=workflow, default_branch=default_branch, pr=pr,
                                    authorized_sha=sha, command=command, requester=requester, key=key,
                                    gpu_hours=gpu_hours, runner_labels=runner_labels, planner=planner)
        out.dispatched_now = True
        return out
    claim = taken.claim if taken is not None else ledger.claim(key, match_sha)
    resumed = taken.resumed if taken is not None else claim is not None
    read_back = taken.ledger if taken is not None else ledger
    if claim is None:
        claim, read_back = _take_claim(client, pr, key, sha, bot_login, claim_body, match_sha, started_at, holder,
                                       out, requester=requester, gpu_hours=gpu_hours)
        if claim is None:
            return out
        read_back = _merged(ledger, read_back)
    elif taken is not None:
        out.log.append(f"resuming request {key} (claim comment {claim.comment_id})" if resumed else
                       f"claimed request {key} (comment {claim.comment_id})")
    elif not holder_gone(client, claim.holder, holder):
        out.lost = True
        out.log.append(f"request {key} is being handled by run {claim.holder} (claim comment {claim.comment_id}); "
                       "leaving it to that run")
        return out
    else:
        out.log.append(f"resuming request {key} (claim comment {claim.comment_id})")
    out.claim_id = claim.comment_id
    since = claim.created_at - CLOCK_SLACK if claim.created_at else None
    # A resumed claim may have a run; so may a fresh one whose earlier claim became a reply that was
    # deleted since: whether the key has a run is asked of GitHub's runs (the bot's own), not of the comments.
    if resumed:
        existing = find_runs(client, workflow, pr, key, match_sha, since, bot_login=bot_login,
                             default_branch=default_branch)
    elif runs is not None:  # the handler's listing, already only the bot's runs
        existing = sorted((r.run for r in markers.pr_runs(runs(), pr)
                           if r.title.key == key and (match_sha is None or r.title.sha == match_sha)),
                          key=lambda r: r.id)
    else:
        existing = find_runs(client, workflow, pr, key, match_sha, bot_login=bot_login,
                             default_branch=default_branch)
    if existing:
        out.log.append(f"request {key} already has run {existing[0].id}; not dispatching again")
        out.run = DispatchedRun(existing[0].id, existing[0].html_url)
        return out
    if before_dispatch is not None and not before_dispatch(older_claims(read_back, claim, per_sha)):
        out.held = True
        return out
    try:
        if recheck_head:
            out.run = dispatch(client, workflow=workflow, default_branch=default_branch, pr=pr,
                                        authorized_sha=sha, command=command, requester=requester, key=key,
                                        gpu_hours=gpu_hours, runner_labels=runner_labels, planner=planner)
        else:
            out.run = client.dispatch_workflow(workflow, ref=default_branch, inputs=dispatch_inputs(
                pr=pr, sha=sha, command=command, requester=requester, key=key, gpu_hours=gpu_hours,
                runner_labels=runner_labels, planner=planner))
        out.dispatched_now = True
    except HeadMoved as moved:
        moved.claim_id = claim.comment_id  # the refusal replaces the claim
        raise
    except GitHubError as exc:
        if not exc.ambiguous:
            raise
        # The answer was lost, not necessarily the dispatch: ask GitHub instead of sending it again.
        existing = find_runs(client, workflow, pr, key, match_sha, since, bot_login=bot_login,
                             default_branch=default_branch)
        if not existing:
            raise GitHubError(msg("%(failure)s; no run for request %(key)s exists, so nothing was started",
                                  failure=exc.message, key=key), exc.status,
                              ambiguous=False, throttled_s=exc.throttled_s) from None
        out.log.append(f"the dispatch answer was lost ({exc}), but run {existing[0].id} exists")
        out.run = DispatchedRun(existing[0].id, existing[0].html_url)
        out.dispatched_now = True
        return out
    if resumed or not holder or out.run is None or out.run.run_id is None:
        # Two resumers may race past one claim; a fresh claim in Actions cannot be resumed while its
        # holder runs, so only a resumed request, or one claimed outside Actions, looks for twins.
        _cancel_twins(client, workflow, pr, key, match_sha, since, out, bot_login=bot_login,
                      default_branch=default_branch)
    return out


@dataclasses.dataclass
class Taken:
    """What claim_first() found: every comment (the ledger), and the claim this handler acts on."""

    comments: list
    ledger: markers.Ledger
    claim: markers.Claim | None = None  # ours (fresh), or an earlier one this handler resumes
    resumed: bool = False
    lost: bool = False  # another live handler holds the request
    log: list[str] = dataclasses.field(default_factory=list)


def older_claims(ledger: markers.Ledger, mine: markers.Claim, per_sha: bool) -> list[markers.Claim]:
    """The undecided claims of other requests written before `mine` (comment ids only grow): what the
    limits count besides the runs already started (a claim that became its reply is no longer a claim)."""
    def same(c: markers.Claim) -> bool:
        return c.key == mine.key and (not per_sha or c.sha == mine.sha)

    return [c for claims in ledger.claims.values() for c in claims if c.comment_id < mine.comment_id and not same(c)]


def _merged(before: markers.Ledger, read_back: markers.Ledger) -> markers.Ledger:
    """The claims of the full read the handler started with, updated by the comments read back since."""
    merged = markers.Ledger(claims={k: list(v) for k, v in before.claims.items()})
    for key, claims in read_back.claims.items():
        known = {c.comment_id for c in merged.claims.get(key, [])}
        merged.claims.setdefault(key, []).extend(c for c in claims if c.comment_id not in known)
    return merged


def missing_claim(key: str, pr: int, comments: list, bot_login: str, nonce: str) -> GitHubError:
    """Why a claim just written is not among the bot's comments: another login wrote it (bot_login is
    not the token's account), or GitHub lost it."""
    written = next((c for c in comments if f" nonce={nonce}" in c.body), None)
    if written is not None and written.user != bot_login:
        return BotLoginMismatch(msg(
            "the bot posts as %(posted_as)s, but bot_login is %(bot_login)s, so it does not recognise its own "
            "comments (the claim of %(key)s on PR #%(pr)s): set bot_login to %(posted_as)s in %(config)s, "
            "or leave it out (the bot then asks GitHub who it is)", posted_as=written.user, bot_login=bot_login,
            key=key, pr=pr, config=CONFIG_PATH), posted_as=written.user, bot_login=bot_login)
    return GitHubError(msg("could not record the request %(key)s on PR #%(pr)s (its claim comment is missing)",
                           key=key, pr=pr))


def claim_first(client: ClaimClient, *, pr: int, key: str, sha: str, bot_login: str,
                claim_body: Callable[[str], str], holder: str | None = None, requester: str = "",
                gpu_hours: float | None = None) -> Taken:
    """Write the claim, then read every comment once: the ledger and the claim's arbitration in one read.

    The oldest claim of the key wins (comment ids only grow). When it is not ours, ours is removed and
    the earlier one is resumed if its holder is over, or left to it. Raises GitHubError.
    """
    holder = this_run() if holder is None else holder
    nonce = secrets.token_hex(6)
    mine: int | None = None
    log: list[str] = []
    try:
        mine = client.create_comment(pr, claim_body(markers.claim_marker(key, sha, nonce, holder, by=requester,
                                                                          gpu_hours=gpu_hours)))
    except GitHubError as exc:
        if not exc.ambiguous:
            raise
        log.append(f"writing the claim of {key} failed ambiguously ({exc}); reading it back")
    comments = client.list_issue_comments(pr)
    ledger = markers.read_ledger(comments, bot_login)
    first = ledger.claim(key)
    ours = mine or next((c.comment_id for c in ledger.claims.get(key, []) if c.nonce == nonce), None)
    if first is None or ours is None:
        raise missing_claim(key, pr, comments, bot_login, nonce)
    taken = Taken(comments, ledger, first, log=log)
    if first.nonce == nonce:
        return taken
    try:
        client.delete_comment(ours)
    except GitHubError as exc:  # a stray later claim is harmless: only the first one counts
        log.append(f"could not delete the extra claim comment {ours}: {exc}")
    ledger.claims[key] = [c for c in ledger.claims[key] if c.comment_id != ours]
    if holder_gone(client, first.holder, holder):
        taken.resumed = True
    else:
        taken.lost = True
        log.append(f"request {key} is being handled by run {first.holder} (claim comment {first.comment_id}); "
                   "leaving it to that run")
    return taken


def claim_comment(h: Handler, event: CommentEvent, parsed: ParsedComment, reply: Reply) -> Pull | None:
    """A comment that may start a GPU run writes its claim (with its estimate) before anything else, then reads
    every comment once: that one read is the ledger, the claim's arbitration, and the older claims that the
    limits count. Other comments read the comments
    only. Records them in h.state (and the claim); returns the PR it read, or None."""
    gpu = [c for c in parsed.commands if c.spec.starts_gpu_work and not (c.name == "rerun" and c.failed)]
    if not gpu or not event.on_pull or h.client.dry_run:
        h.state.read_comments(h.client.list_issue_comments(event.number))
        return None

    pull = event.pull or h.pull(event.number)
    line = gpu[0].normalized()
    starts = h.command_that_starts(gpu[0], pull)  # a /rerun's estimate is the restarted command's
    hours = h.claim_hours(starts.normalized(), pull) if starts is not None else None
    taken = claim_first(h.client, pr=event.number, key=event.key, sha=pull.head_sha, bot_login=h.bot_login(),
                        claim_body=lambda marker: marker + "\n" + i18n.render_bilingual(
                            "control/starting", command=line, sha=pull.head_sha, requester=event.sender) + "\n",
                        requester=event.sender, gpu_hours=hours)
    for entry in taken.log:
        h.log(entry)
    reply.stay_silent(taken.lost)
    h.state.take_claim(taken, older_claims(taken.ledger, taken.claim, per_sha=False))
    reply.claims.append(taken.claim.comment_id)
    return pull


def drop_claim(h: Handler) -> None:
    """The request was already handled: remove the claim this handler wrote before finding that out."""
    taken = h.state.taken
    if taken is not None and not taken.resumed:
        h.client.delete_comment(taken.claim.comment_id)


def this_run(environ: dict[str, str] | None = None) -> str:
    """`<run id>.<attempt>` of the Actions run this handler is, or "" outside Actions."""
    env = os.environ if environ is None else environ
    run_id, attempt = env.get("GITHUB_RUN_ID", ""), env.get("GITHUB_RUN_ATTEMPT", "") or "1"
    return f"{run_id}.{attempt}" if run_id.isdigit() and attempt.isdigit() else ""


def holder_gone(client: RunsClient, theirs: str, mine: str) -> bool:
    """Whether the handler that wrote a claim is over, so that its request may be resumed."""
    if not theirs:
        return True  # written outside Actions: nothing to ask; the check after dispatch covers a race
    their_run = theirs.partition(".")[0]
    if their_run == mine.partition(".")[0]:
        return True  # a re-run of the same job: the attempt that wrote the claim has ended
    try:
        run = client.get_run(int(their_run))
    except ValueError:
        return True
    except GitHubError as exc:
        if exc.status == 404:  # deleted, or another repository's run id: no one is holding it
            return True
        raise
    return not run.active and run.status == "completed"


def _take_claim(client: ClaimClient, pr: int, key: str, sha: str, bot_login: str,
                claim_body: Callable[[str], str], match_sha: str | None, started_at: dt.datetime,
                holder: str, out: Started, *, requester: str, gpu_hours: float | None
                ) -> tuple[markers.Claim | None, markers.Ledger]:
    """Write the claim and read the claims back: the first of the key (None: another handler's), and
    the claims read."""
    nonce = secrets.token_hex(6)
    mine: int | None = None
    try:
        mine = client.create_comment(pr, claim_body(markers.claim_marker(key, sha, nonce, holder, by=requester,
                                                                          gpu_hours=gpu_hours)))
    except GitHubError as exc:
        if not exc.ambiguous:
            raise
        out.log.append(f"writing the claim of {key} failed ambiguously ({exc}); reading it back")
    # Read the claims back: the oldest wins (comment ids only grow), whoever wrote it. The full ledger
    # read before had none, so only comments written since then can hold one: read by time.
    read_back = client.list_issue_comments(pr, since=started_at - CLOCK_SLACK)
    ledger = markers.read_ledger(read_back, bot_login)
    first = ledger.claim(key, match_sha)
    if first is None:
        raise missing_claim(key, pr, read_back, bot_login, nonce)
    # A handler that claimed, dispatched and answered between this one's full read and its claim has
    # turned its claim into the acknowledgement: the request is answered, so this one is the second.
    answered = ledger.acked(key, match_sha)
    if first.nonce != nonce or answered:
        out.lose(f"another handler answered request {key} first; leaving it" if answered else
                 f"another handler claimed request {key} first (comment {first.comment_id}); leaving it")
        ours = mine or next((c.comment_id for c in ledger.claims.get(key, []) if c.nonce == nonce), None)
        if ours is not None:
            try:
                client.delete_comment(ours)
            except GitHubError as exc:  # a stray later claim is harmless: only the first one counts
                out.log.append(f"could not delete the extra claim comment {ours}: {exc}")
        return None, ledger
    return first, ledger


def _cancel_twins(client: RunsClient, workflow: str, pr: int, key: str, sha: str | None,
                  since: dt.datetime | None, out: Started, *, bot_login: str, default_branch: str) -> None:
    """Check after dispatch: if two resumers raced past the claim, keep the oldest run, cancel the rest."""
    runs = find_runs(client, workflow, pr, key, sha, since, bot_login=bot_login, default_branch=default_branch)
    if len(runs) < 2:
        return
    keep = runs[0]
    for twin in runs[1:]:
        if twin.active:
            try:
                client.cancel_run(twin.id)
                out.log.append(f"cancelled run {twin.id}: a second run of request {key} (kept {keep.id})")
            except GitHubError as exc:
                out.log.append(f"could not cancel duplicate run {twin.id}: {exc}")
    out.keep(DispatchedRun(keep.id, keep.html_url))


def create_reply(client: CommentsClient, number: int, body: str, bot_login: str,
                 started_at: dt.datetime) -> list[str]:
    """Post a reply once: when the answer is lost, look for it instead of posting a second one; when
    another handler of the same event replied too, the later reply deletes itself. Returns log lines."""
    mine: int | None = None
    lost: GitHubError | None = None
    try:
        mine = client.create_comment(number, body)
    except GitHubError as exc:
        if not exc.ambiguous:
            raise
        lost = exc
    header = body.split("\n", 1)[0]
    if client.dry_run or not header.startswith(MARKER_PREFIX):
        return []
    twins = [c for c in client.list_issue_comments(number, since=started_at - CLOCK_SLACK)
             if written_by(c, bot_login) and c.body.split("\n", 1)[0] == header]
    if lost is not None and not twins:
        raise GitHubError(msg("%(failure)s; the reply is not there, so it was not posted", failure=lost.message),
                          lost.status) from None
    first = min(c.id for c in twins) if twins else mine
    if mine is not None and first is not None and first < mine:
        client.delete_comment(mine)
        return [f"another handler already replied (comment {first}); removed this one's duplicate {mine}"]
    return []
