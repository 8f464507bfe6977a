"""Pull request operations: get, list, files, commits and reviews, computed from the git repository."""
from __future__ import annotations

from ..state import record_edit, utcnow
from . import ApiError, Call, Reply, check_repo, find_issue, int_param, not_found, operation, paginate, require_user

MAX_FILES = 3000  # GitHub lists at most 3000 files of a pull request


@operation("pulls/get")
def get_pull(call: Call) -> Reply:
    check_repo(call)
    return Reply(200, call.shapes.pull(find_issue(call, pull=True)))


@operation("pulls/list")
def list_pulls(call: Call) -> Reply:
    check_repo(call)
    st = call.state
    want = call.query.get("state", "open")
    head = call.query.get("head")
    base = call.query.get("base")
    pulls = [i for i in st.issues.values() if i.is_pull and (want == "all" or i.state == want)]
    if head:
        owner, _, branch = head.partition(":")
        pulls = [p for p in pulls if p.head == branch and st.head_repo_full_name(p).split("/")[0] == owner]
    if base:
        pulls = [p for p in pulls if p.base == base]
    sort = call.query.get("sort", "created")
    key = {"created": lambda p: (p.created, p.number), "updated": lambda p: (p.updated, p.number)}.get(
        sort, lambda p: (p.created, p.number))
    descending = call.query.get("direction", "desc") == "desc"
    pulls.sort(key=key, reverse=descending)
    return paginate(call, [call.shapes.pull(p, simple=True) for p in pulls])


@operation("pulls/list-files")
def list_files(call: Call) -> Reply:
    check_repo(call)
    st = call.state
    issue = find_issue(call, pull=True)
    head, base = st.head_sha(issue), st.base_sha(issue)
    merge_base = st.git.merge_base(base, head) or base
    changes = st.git.diff(merge_base, head)[:MAX_FILES]
    return paginate(call, [call.shapes.diff_entry(c, head) for c in changes])


@operation("pulls/list-commits")
def list_commits(call: Call) -> Reply:
    check_repo(call)
    st = call.state
    issue = find_issue(call, pull=True)
    shas = list(reversed(st.git.rev_list(f"{st.base_sha(issue)}..{st.head_sha(issue)}")))
    return paginate(call, [call.shapes.commit(s) for s in shas])


@operation("pulls/list-reviews")
def list_reviews(call: Call) -> Reply:
    check_repo(call)
    issue = find_issue(call, pull=True)
    reviews = sorted((r for r in call.state.reviews.values() if r.pull == issue.number), key=lambda r: r.id)
    return paginate(call, [call.shapes.review(r) for r in reviews])


@operation("pulls/update-review")
def update_review(call: Call) -> Reply:
    """A review's body edited: by its author, or (as GitHub lets them) by anyone with push access."""
    check_repo(call)
    issue = find_issue(call, pull=True)
    review = call.state.reviews.get(int_param(call, "review_id"))
    if review is None or review.pull != issue.number:
        raise not_found()
    user = require_user(call)
    if user != review.user and not call.state.can(user, "write"):
        raise ApiError(403, "Must have push access to edit another user's review")
    review.body = call.body["body"]
    record_edit(review, user, utcnow())
    return Reply(200, call.shapes.review(review))
