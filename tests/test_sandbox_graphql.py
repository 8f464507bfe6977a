"""The sandbox's POST /graphql: queries validated against GitHub's published schema, answered from its state."""
from __future__ import annotations

from github_sandbox import graphql, upstream
from handle_helpers import BOT, seed

HISTORY = """query($ids: [ID!]!) { nodes(ids: $ids) { __typename ... on IssueComment { databaseId
  author { __typename login } editor { login } lastEditedAt
  userContentEdits(first: 10) { totalCount nodes { editedAt editor { __typename login } } } } } }"""


def test_a_valid_query_answers_the_edit_history_and_a_field_github_lacks_is_refused(sandbox, tmp_path):
    sb = sandbox(seed(tmp_path))
    posted = sb.request("POST", "/repos/acme/bench/issues/7/comments", {"body": "ok"}, user=BOT)
    sb.request("PATCH", f"/repos/acme/bench/issues/comments/{posted['id']}", {"body": "forged"}, user="carol")
    answer = sb.request("POST", "/graphql", {"query": HISTORY, "variables": {"ids": [posted["node_id"]]}}, user=BOT)
    [node] = answer["data"]["nodes"]
    assert node["databaseId"] == posted["id"] and "errors" not in answer
    assert node["author"] == {"__typename": "Bot", "login": "recipe-bot"}  # GraphQL leaves "[bot]" off
    assert node["editor"] == {"login": "carol"} and node["lastEditedAt"]
    edits = node["userContentEdits"]
    assert edits["totalCount"] == 2  # the edit, and the created version GitHub lists with it
    assert [e["editor"]["login"] for e in edits["nodes"]] == ["carol", "recipe-bot"]  # newest first

    refused = sb.request("POST", "/graphql", {"query": "{ viewer { login pinnedSecret } }"}, user=BOT)
    assert "data" not in refused
    [error] = refused["errors"]
    assert error["message"] == "Field 'pinnedSecret' doesn't exist on type 'User'"
    assert error["extensions"] == {"code": "undefinedField", "typeName": "User", "fieldName": "pinnedSecret"}
    [entry] = [e for e in sb.log(all=True) if e["operation"] == "graphql" and not e["valid"]]
    assert entry["errors"] == [error["message"]]


def test_pull_request_comments_page_with_cursors_and_a_missing_repository_is_not_found(sandbox, tmp_path):
    sb = sandbox(seed(tmp_path))
    ids = [sb.request("POST", "/repos/acme/bench/issues/7/comments", {"body": f"c{i}"}, user="carol")["id"]
           for i in range(3)]
    page = """query($after: String) { repository(owner: "acme", name: "bench") { pullRequest(number: 7) {
      comments(first: 2, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { databaseId } } } } }"""
    seen, after = [], None
    while True:
        data = sb.request("POST", "/graphql", {"query": page, "variables": {"after": after}}, user=BOT)["data"]
        comments = data["repository"]["pullRequest"]["comments"]
        seen += [n["databaseId"] for n in comments["nodes"]]
        if not comments["pageInfo"]["hasNextPage"]:
            break
        after = comments["pageInfo"]["endCursor"]
    assert seen == ids and comments["totalCount"] == 3
    missing = sb.request("POST", "/graphql", {"query": '{ repository(owner: "acme", name: "nope") { id } }'}, user=BOT)
    assert missing["data"] == {"repository": None} and missing["errors"][0]["type"] == "NOT_FOUND"


def test_the_schema_is_the_pinned_octokit_package():
    assert upstream.package_version(upstream.GRAPHQL_SCHEMA) == upstream.pinned_version(upstream.GRAPHQL_SCHEMA)
    assert "userContentEdits" in graphql.schema().get_type("IssueComment").fields
