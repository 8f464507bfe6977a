"""A pull request and one file of a branch read in one GraphQL query, as REST's pulls/get and contents give them.

A comment that may start a GPU run needs the default branch's config (read by branch name: it may have
changed) and the PR's live head before anything else; both are reads of the moment, so asking for them in
one request decides on nothing older than two requests would. The answer is read into the same `Pull` as
pulls/get's (GitHub's GraphQL writes an app's login without REST's "[bot]", and a merged PR's state as
MERGED); a PR with more labels than one page holds, or a file GraphQL gives no text for (binary, or too
large), is read again through REST, so nothing is lost to the shorter form.
"""
from __future__ import annotations

from typing import Any

from bot.core.events import Pull
from bot.core.github_records import rest_login

LABELS_PAGE = 100  # GitHub's largest page

PULL_AND_FILE_QUERY = """query($owner: String!, $name: String!, $number: Int!, $expression: String!) {
  repository(owner: $owner, name: $name) {
    nameWithOwner
    object(expression: $expression) { __typename ... on Blob { text isBinary } }
    pullRequest(number: $number) {
      number state isDraft merged updatedAt
      author { __typename login }
      headRefOid baseRefName baseRefOid
      headRepository { nameWithOwner }
      baseRepository { nameWithOwner }
      labels(first: %d) { pageInfo { hasNextPage } nodes { name } }
    }
  }
}""" % LABELS_PAGE


def variables(repository: str, number: int, path: str, ref: str) -> dict[str, Any]:
    owner, name = repository.split("/", 1)
    return {"owner": owner, "name": name, "number": number, "expression": f"{ref}:{path}"}


class Incomplete(ValueError):
    """The answer lacks something REST would have given: read that part through REST instead."""


def pull_from_graphql(node: Any) -> Pull:
    """The Pull that pulls/get would give, from the query's `pullRequest`; Incomplete when it cannot be."""
    if not isinstance(node, dict) or not isinstance(node.get("number"), int):
        raise Incomplete("no pullRequest in the answer")
    labels = node.get("labels") or {}
    if (labels.get("pageInfo") or {}).get("hasNextPage"):
        raise Incomplete("more labels than one page")
    base_repo = (node.get("baseRepository") or {}).get("nameWithOwner")
    head_sha, base_ref, base_sha = node.get("headRefOid"), node.get("baseRefName"), node.get("baseRefOid")
    if not all(isinstance(v, str) and v for v in (base_repo, head_sha, base_ref, base_sha)):
        raise Incomplete("the pull request's head or base is missing")
    state = str(node.get("state") or "")
    merged = bool(node.get("merged")) or state == "MERGED"
    return Pull(number=node["number"], state="open" if state == "OPEN" else "closed",
                draft=bool(node.get("isDraft")), merged=merged,
                # REST names a deleted account "ghost"; GraphQL answers null
                author=rest_login(node.get("author")) or "ghost",
                head_sha=head_sha, head_repo=(node.get("headRepository") or {}).get("nameWithOwner"),
                base_repo=base_repo, base_ref=base_ref, base_sha=base_sha,
                labels=tuple(str(n["name"]) for n in labels.get("nodes") or [] if isinstance(n, dict) and n.get("name")),
                updated_at=str(node.get("updatedAt") or ""))


def file_from_graphql(obj: Any) -> tuple[bool, str | None]:
    """(known, text) from the query's `object`: (True, None) when there is no such file, (False, None) when
    GraphQL gave no text for one that exists."""
    if obj is None:
        return True, None
    if isinstance(obj, dict) and obj.get("__typename") == "Blob" and isinstance(obj.get("text"), str) \
            and not obj.get("isBinary"):
        return True, obj["text"]
    if isinstance(obj, dict) and obj.get("__typename") not in ("Blob", None):
        return True, None  # a folder (Tree) or a submodule where the file would be: REST's contents says "no file"
    return False, None
