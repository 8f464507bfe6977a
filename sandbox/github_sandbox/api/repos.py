"""Repository, git, status, collaborator, user and team operations."""
from __future__ import annotations

from ..state import Status, utcnow
from . import (ApiError, Call, Reply, check_repo, not_found, operation, paginate, require_push, require_user,
               resolve_commit)

_DIFF = "application/vnd.github.diff"
_PATCH = "application/vnd.github.patch"


def _text_format(call: Call) -> str | None:
    """GitHub answers diff/patch media types on compare and commit endpoints with plain text."""
    accept = call.accept or ""
    if "vnd.github.diff" in accept or "vnd.github.v3.diff" in accept:
        return _DIFF
    if "vnd.github.patch" in accept or "vnd.github.v3.patch" in accept:
        return _PATCH
    return None


@operation("repos/get")
def get_repo(call: Call) -> Reply:
    check_repo(call)
    return Reply(200, call.shapes.repository(viewer=call.user))


@operation("repos/get-content")
def get_content(call: Call) -> Reply:
    check_repo(call)
    st = call.state
    ref = call.query.get("ref") or st.default_branch
    sha = st.git.ref_sha(ref)
    path = call.params.get("path", "").strip("/")
    if sha is None:
        raise ApiError(404, f"No commit found for the ref {ref}")
    kind = st.git.object_type(sha, path)
    if kind == "tree":
        return Reply(200, [call.shapes.content_entry(e, ref) for e in st.git.tree(sha, path)])
    if kind == "blob":
        data = st.git.read_file(sha, path) or b""
        blob = st.git.blob_sha(sha, path) or ""
        return Reply(200, call.shapes.content_file(path, ref, blob, data))
    raise not_found()


def _split_basehead(basehead: str) -> tuple[str, str]:
    for sep in ("...", ".."):
        if sep in basehead:
            base, head = basehead.split(sep, 1)
            # "owner:branch" names a branch of a fork; the sandbox keeps all branches in one repository.
            return base.split(":")[-1], head.split(":")[-1]
    raise not_found()


@operation("repos/compare-commits")
def compare(call: Call) -> Reply:
    check_repo(call)
    base_ref, head_ref = _split_basehead(call.params["basehead"])
    git = call.state.git
    base, head = git.ref_sha(base_ref), git.ref_sha(head_ref)
    if base is None or head is None:
        raise not_found()
    fmt = _text_format(call)
    if fmt == _DIFF:
        return Reply(200, git.diff_text(git.merge_base(base, head) or base, head), media_type=_DIFF)
    if fmt == _PATCH:
        return Reply(200, git.patch_text(git.merge_base(base, head) or base, head), media_type=_PATCH)
    return Reply(200, call.shapes.comparison(call.params["basehead"], base, head))


@operation("repos/get-commit")
def get_commit(call: Call) -> Reply:
    check_repo(call)
    sha = resolve_commit(call, call.params["ref"])
    fmt = _text_format(call)
    if fmt:
        parent = (call.state.git.commit(sha).parents or ("4b825dc642cb6eb9a060e54bf8d69288fbee4904",))[0]
        text = call.state.git.diff_text(parent, sha) if fmt == _DIFF else call.state.git.patch_text(parent, sha)
        return Reply(200, text, media_type=fmt)
    return Reply(200, call.shapes.commit(sha, files=True))


@operation("repos/list-commits")
def list_commits(call: Call) -> Reply:
    check_repo(call)
    start = call.query.get("sha") or call.state.default_branch
    sha = call.state.git.ref_sha(start)
    if sha is None:
        raise not_found()
    shas = call.state.git.rev_list(sha, path=call.query.get("path"))
    return paginate(call, [call.shapes.commit(s) for s in shas])


@operation("repos/get-branch")
def get_branch(call: Call) -> Reply:
    check_repo(call)
    name = call.params["branch"]
    sha = call.state.git.branch_sha(name)
    if sha is None:
        raise ApiError(404, "Branch not found")
    return Reply(200, call.shapes.branch(name, sha))


@operation("git/get-ref")
def get_ref(call: Call) -> Reply:
    check_repo(call)
    ref = call.params["ref"]
    if not ref.startswith(("heads/", "tags/")):
        raise not_found()
    sha = call.state.git.resolve(f"refs/{ref}")
    if sha is None:
        raise not_found()
    return Reply(200, call.shapes.git_ref(f"refs/{ref}", sha))


@operation("repos/create-commit-status")
def create_status(call: Call) -> Reply:
    check_repo(call)
    user = require_push(call)
    sha = resolve_commit(call, call.params["sha"])
    body = call.body
    context = body.get("context") or "default"
    now = utcnow()
    status = Status(call.state.new_id(), sha, body["state"], context, body.get("description"),
                    body.get("target_url"), user, now, now)
    call.state.statuses[status.id] = status
    return Reply(201, call.shapes.status(status), {"Location": f"{call.shapes.repo_api}/statuses/{sha}"})


def _statuses_for(call: Call) -> tuple[str, list[Status]]:
    sha = call.state.git.ref_sha(call.params["ref"])
    if sha is None:
        raise not_found()
    found = sorted((s for s in call.state.statuses.values() if s.sha == sha), key=lambda s: s.id, reverse=True)
    return sha, found


@operation("repos/list-commit-statuses-for-ref")
def list_statuses(call: Call) -> Reply:
    check_repo(call)
    _, found = _statuses_for(call)
    return paginate(call, [call.shapes.status(s) for s in found])


@operation("repos/get-combined-status-for-ref")
def combined_status(call: Call) -> Reply:
    check_repo(call)
    sha, found = _statuses_for(call)
    latest: dict[str, Status] = {}
    for s in found:  # newest first: the first per context wins
        latest.setdefault(s.context.lower(), s)
    return Reply(200, call.shapes.combined_status(call.params["ref"], sha, list(latest.values())))


@operation("repos/get-collaborator-permission-level")
def collaborator_permission(call: Call) -> Reply:
    check_repo(call)
    login = call.params["username"]
    if not call.state.is_known(login):
        raise not_found()
    role = call.state.permission(login)
    legacy = {"maintain": "write", "triage": "read"}.get(role, role)
    return Reply(200, {"permission": legacy, "role_name": role, "user": call.shapes.collaborator(login)})


@operation("repos/list-collaborators")
def list_collaborators(call: Call) -> Reply:
    check_repo(call)
    want = call.query.get("permission")
    st = call.state
    logins = sorted(login for login, perm in st.permissions.items()
                    if perm != "none" and not login.endswith("[bot]") and (want is None or st.can(login, _level(want))))
    return paginate(call, [call.shapes.collaborator(login) for login in logins])


def _level(permission: str) -> str:
    return {"pull": "read", "push": "write"}.get(permission, permission)


@operation("repos/create-dispatch-event")
def repository_dispatch(call: Call) -> Reply:
    check_repo(call)
    user = require_push(call)
    call.state.repository_dispatches.append({"event_type": call.body["event_type"],
                                             "client_payload": call.body.get("client_payload") or {},
                                             "actor": user, "created": utcnow()})
    return Reply(204)


@operation("users/get-authenticated")
def get_authenticated(call: Call) -> Reply:
    return Reply(200, call.shapes.public_user(require_user(call)))


@operation("users/get-by-username")
def get_user(call: Call) -> Reply:
    login = call.params["username"]
    if not call.state.is_known(login):
        raise not_found()
    return Reply(200, call.shapes.public_user(login))


@operation("orgs/check-membership-for-user")
def org_membership(call: Call) -> Reply:
    if call.params["username"] in call.state.org_members(call.params["org"]):
        return Reply(204)
    raise ApiError(404, "User does not exist or is not a member of the organization")


def _team(call: Call) -> list[str]:
    key = f"{call.params['org']}/{call.params['team_slug']}"
    members = next((v for k, v in call.state.teams.items() if k.lower() == key.lower()), None)
    if members is None:
        raise not_found()
    return members


@operation("teams/get-membership-for-user-in-org")
def team_membership(call: Call) -> Reply:
    members = _team(call)
    login = call.params["username"]
    if login not in members:
        raise not_found()
    url = f"{call.shapes.api}/orgs/{call.params['org']}/teams/{call.params['team_slug']}/memberships/{login}"
    return Reply(200, {"url": url, "role": "member", "state": "active"})


@operation("teams/list-members-in-org")
def team_members(call: Call) -> Reply:
    require_user(call)
    return paginate(call, [call.shapes.simple_user(m) for m in _team(call)])
