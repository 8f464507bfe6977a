"""The PR and the default branch's config read in one GraphQL query give what pulls/get and contents give: the same
Pull for a same-repo PR, a fork, a draft, a merged PR and a bot's PR, the same file text, and REST wherever the
short answer lacks a part."""
from __future__ import annotations

import pytest

from bot.core.github import GitHubClient
from bot.core.github_graphql import Incomplete, file_from_graphql, pull_from_graphql
from handle_helpers import BOT, PULLS, seed

CONFIG = ".github/recipe-bot.yaml"


def client(sb) -> GitHubClient:
    return GitHubClient(base_url=sb.url, token=BOT, repository="acme/bench")


def test_each_pull_and_the_config_read_in_one_query_equal_pulls_get_and_contents(sandbox, tmp_path):
    pulls = PULLS + [{"number": 11, "head": "feature", "base": "main", "author": "dependabot[bot]", "title": "Bump",
                      "labels": ["sweep-enabled", "deps"]},
                     {"number": 12, "head": "feature", "base": "main", "author": "carol", "title": "Merged"}]
    sb = sandbox(seed(tmp_path, pulls=pulls))
    sb.update_pull(12, state="closed", merged=True, merged_by="alice")
    c = client(sb)
    for number in (7, 8, 9, 10, 11, 12):
        before = (sb.log(all=True) or [{"seq": 0}])[-1]["seq"]
        pull, text = c.get_pull_and_text(number, CONFIG, "main")
        assert [e["operation"] for e in sb.log(all=True, since=before)] == ["graphql"], number
        assert pull == c.get_pull(number), number
        assert text == c.get_text(CONFIG, "main") and text.startswith("bot_login:")
    assert client(sb).get_pull_and_text(9, CONFIG, "main")[0].fork
    assert client(sb).get_pull_and_text(11, CONFIG, "main")[0].author == "dependabot[bot]"  # REST's login
    # no such file, at a branch or a full SHA: None, as contents' 404 gives it, still in one request
    assert c.get_pull_and_text(7, "missing.yaml", "main")[1] is None
    assert c.get_pull_and_text(7, CONFIG, sb.state()["pulls"][0]["head_sha"])[1] == c.get_text(CONFIG, "main")


def test_a_number_that_is_no_pull_request_fails_as_pulls_get_fails(sandbox, tmp_path):
    sb = sandbox(seed(tmp_path))
    with pytest.raises(Exception) as through_graphql:
        client(sb).get_pull_and_text(20, CONFIG, "main")  # #20 is an issue
    with pytest.raises(Exception) as through_rest:
        client(sb).get_pull(20)
    assert type(through_graphql.value) is type(through_rest.value)
    assert str(through_graphql.value) == str(through_rest.value)


NODE = {"number": 7, "state": "OPEN", "isDraft": False, "merged": False, "updatedAt": "2026-12-02T10:00:00Z",
        "author": {"__typename": "User", "login": "carol"}, "headRefOid": "a" * 40, "baseRefName": "main",
        "baseRefOid": "b" * 40, "headRepository": {"nameWithOwner": "carol/bench"},
        "baseRepository": {"nameWithOwner": "acme/bench"},
        "labels": {"pageInfo": {"hasNextPage": False}, "nodes": [{"name": "sweep-enabled"}]}}


@pytest.mark.parametrize("name, change, expected", [
    ("an open fork PR", {}, {"state": "open", "fork": True, "labels": ("sweep-enabled",), "author": "carol"}),
    ("merged: closed and merged, as REST says", {"state": "MERGED", "merged": True}, {"state": "closed", "merged": True}),
    ("an app's PR: REST's [bot] login", {"author": {"__typename": "Bot", "login": "dependabot"}},
     {"author": "dependabot[bot]"}),
    ("a deleted account: REST's ghost", {"author": None}, {"author": "ghost"}),
    ("a deleted fork: no head repository", {"headRepository": None}, {"head_repo": None, "fork": True}),
])
def test_a_pull_request_node_reads_as_pulls_get(name, change, expected):
    pull = pull_from_graphql({**NODE, **change})
    assert {k: getattr(pull, k) for k in expected} == expected, name
    assert pull.head_sha == "a" * 40 and pull.base_sha == "b" * 40 and pull.base_ref == "main"


@pytest.mark.parametrize("name, change", [
    ("more labels than one page: REST lists them all", {"labels": {"pageInfo": {"hasNextPage": True}, "nodes": []}}),
    ("no head SHA", {"headRefOid": None}),
    ("no base repository", {"baseRepository": None}),
])
def test_a_node_that_lacks_what_pulls_get_gives_is_read_through_rest(name, change):
    with pytest.raises(Incomplete):
        pull_from_graphql({**NODE, **change})
    with pytest.raises(Incomplete):
        pull_from_graphql(None)  # the PR did not resolve (the answer has errors)


@pytest.mark.parametrize("name, obj, expected", [
    ("a text file", {"__typename": "Blob", "text": "x: 1\n", "isBinary": False}, (True, "x: 1\n")),
    ("no such path: null", None, (True, None)),
    ("a folder where the file would be: no file, as contents says", {"__typename": "Tree"}, (True, None)),
    ("a binary file: read through REST", {"__typename": "Blob", "text": None, "isBinary": True}, (False, None)),
    ("a blob without text (too large): read through REST", {"__typename": "Blob", "text": None}, (False, None)),
])
def test_a_file_object_reads_as_contents(name, obj, expected):
    assert file_from_graphql(obj) == expected, name


class Answering(GitHubClient):
    """GitHub answering the one query with `answer`; every other request goes to the sandbox."""

    def __init__(self, answer, **kwargs):
        super().__init__(**kwargs)
        self.answer, self.rest = answer, []

    def _call(self, verb, path, **kwargs):
        if path.endswith("/graphql"):
            return {}, self.answer
        self.rest.append(path)
        return super()._call(verb, path, **kwargs)


def test_a_null_file_beside_errors_is_read_through_rest_not_taken_for_no_config(sandbox, tmp_path):
    sb = sandbox(seed(tmp_path))
    partial = {"data": {"repository": {"object": None, "pullRequest": None}},
               "errors": [{"path": ["repository", "object"], "message": "Something went wrong"}]}
    c = Answering(partial, base_url=sb.url, token=BOT, repository="acme/bench")
    pull, text = c.get_pull_and_text(7, CONFIG, "main")
    assert text is not None and text.startswith("bot_login:")  # the config as contents gives it
    assert pull == client(sb).get_pull(7)
    assert c.rest == ["pulls/7", "contents/.github/recipe-bot.yaml"]
    # without errors, null is GitHub saying there is no such file: no REST read for it
    absent = Answering({"data": {"repository": {"object": None, "pullRequest": None}}},
                       base_url=sb.url, token=BOT, repository="acme/bench")
    assert absent.get_pull_and_text(7, CONFIG, "main")[1] is None and absent.rest == ["pulls/7"]
