"""Issues, pull requests, comments, labels, reactions and reviews as GitHub's REST API returns them."""
from __future__ import annotations

from typing import Any
from urllib.parse import quote

from ..state import Comment, Issue, Reaction, Review
from .base import ShapesBase, node_id, stable_id

REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


class IssueShapes(ShapesBase):
    def label(self, name: str) -> dict[str, Any]:
        lab = self.state.ensure_label(name)
        return {"id": lab.id, "node_id": node_id("Label", lab.id), "url": f"{self.repo_api}/labels/{quote(name, safe='')}",
                "name": name, "description": lab.description, "color": lab.color, "default": False}

    def reaction_rollup(self, url: str, subject: str, subject_id: int) -> dict[str, Any]:
        counts = {k: 0 for k in REACTIONS}
        for r in self.state.reactions.values():
            if r.subject == subject and r.subject_id == subject_id:
                counts[r.content] += 1
        return {"url": url, "total_count": sum(counts.values()), **counts}

    def reaction(self, r: Reaction) -> dict[str, Any]:
        return {"id": r.id, "node_id": node_id("Reaction", r.id), "user": self.simple_user(r.user),
                "content": r.content, "created_at": r.created}

    def _issue_web(self, issue: Issue) -> str:
        return f"{self.repo_web}/{'pull' if issue.is_pull else 'issues'}/{issue.number}"

    def comment(self, c: Comment) -> dict[str, Any]:
        issue = self.state.issues[c.issue]
        url = f"{self.repo_api}/issues/comments/{c.id}"
        return {
            "id": c.id, "node_id": node_id("IssueComment", c.id), "url": url,
            "html_url": f"{self._issue_web(issue)}#issuecomment-{c.id}", "body": c.body,
            "user": self.simple_user(c.user), "created_at": c.created, "updated_at": c.updated,
            "issue_url": f"{self.repo_api}/issues/{c.issue}", "author_association": self.state.association(c.user),
            "performed_via_github_app": self.app() if c.user == self.state.bot else None,
            "reactions": self.reaction_rollup(f"{url}/reactions", "comment", c.id),
        }

    def comment_count(self, number: int) -> int:
        return sum(1 for c in self.state.comments.values() if c.issue == number)

    def issue(self, issue: Issue) -> dict[str, Any]:
        n = issue.number
        api = f"{self.repo_api}/issues/{n}"
        ident = stable_id("issue", f"{self.state.full_name}#{n}")
        data: dict[str, Any] = {
            "id": ident, "node_id": node_id("Issue", ident), "url": api, "repository_url": self.repo_api,
            "labels_url": f"{api}/labels{{/name}}", "comments_url": f"{api}/comments", "events_url": f"{api}/events",
            "html_url": self._issue_web(issue), "number": n, "state": issue.state, "state_reason": None,
            "title": issue.title, "body": issue.body, "user": self.simple_user(issue.author),
            "labels": [self.label(name) for name in issue.labels], "assignee": None, "assignees": [],
            "milestone": None, "locked": False, "active_lock_reason": None, "comments": self.comment_count(n),
            "closed_at": issue.closed_at, "created_at": issue.created, "updated_at": issue.updated,
            "author_association": self.state.association(issue.author),
            "reactions": self.reaction_rollup(f"{api}/reactions", "issue", n),
        }
        if issue.is_pull:
            pr = f"{self.repo_api}/pulls/{n}"
            web = self._issue_web(issue)
            data["draft"] = issue.draft
            data["pull_request"] = {"url": pr, "html_url": web, "diff_url": f"{web}.diff",
                                    "patch_url": f"{web}.patch", "merged_at": issue.merged_at}
        return data

    def _pull_stats(self, issue: Issue, head: str, base: str) -> dict[str, int]:
        git = self.state.git
        merge_base = git.merge_base(base, head) or base
        changes = git.diff(merge_base, head)
        return {"commits": len(git.rev_list(f"{base}..{head}")),
                "additions": sum(c.additions for c in changes), "deletions": sum(c.deletions for c in changes),
                "changed_files": len(changes)}

    def _branch_end(self, owner: str, full_name: str, ref: str, sha: str, fork: bool) -> dict[str, Any]:
        return {"label": f"{owner}:{ref}", "ref": ref, "sha": sha, "user": self.simple_user(owner),
                "repo": self.repository(full_name, fork=fork)}

    def pull(self, issue: Issue, *, simple: bool = False) -> dict[str, Any]:
        st = self.state
        n = issue.number
        api = f"{self.repo_api}/pulls/{n}"
        issue_api = f"{self.repo_api}/issues/{n}"
        web = self._issue_web(issue)
        head, base = st.head_sha(issue), st.base_sha(issue)
        head_full = st.head_repo_full_name(issue)
        ident = stable_id("pull", f"{st.full_name}#{n}")
        data: dict[str, Any] = {
            "url": api, "id": ident, "node_id": node_id("PullRequest", ident), "html_url": web,
            "diff_url": f"{web}.diff", "patch_url": f"{web}.patch", "issue_url": issue_api,
            "commits_url": f"{api}/commits", "review_comments_url": f"{api}/comments",
            "review_comment_url": f"{self.repo_api}/pulls/comments{{/number}}", "comments_url": f"{issue_api}/comments",
            "statuses_url": f"{self.repo_api}/statuses/{head}", "number": n, "state": issue.state, "locked": False,
            "title": issue.title, "user": self.simple_user(issue.author), "body": issue.body,
            "labels": [self.label(name) for name in issue.labels], "milestone": None, "active_lock_reason": None,
            "created_at": issue.created, "updated_at": issue.updated, "closed_at": issue.closed_at,
            "merged_at": issue.merged_at, "merge_commit_sha": None, "assignee": None, "assignees": [],
            "requested_reviewers": [], "requested_teams": [],
            "head": self._branch_end(head_full.split("/")[0], head_full, issue.head, head, issue.fork),
            "base": self._branch_end(st.owner, st.full_name, issue.base, base, False),
            "_links": {
                "self": {"href": api}, "html": {"href": web}, "issue": {"href": issue_api},
                "comments": {"href": f"{issue_api}/comments"}, "review_comments": {"href": f"{api}/comments"},
                "review_comment": {"href": f"{self.repo_api}/pulls/comments{{/number}}"},
                "commits": {"href": f"{api}/commits"}, "statuses": {"href": f"{self.repo_api}/statuses/{head}"},
            },
            "author_association": st.association(issue.author), "auto_merge": None, "draft": issue.draft,
        }
        if simple:
            return data
        data.update(
            merged=issue.merged, mergeable=None if issue.state == "closed" else True, rebaseable=True,
            mergeable_state="draft" if issue.draft else "clean",
            merged_by=self.simple_user(issue.merged_by) if issue.merged_by else None,
            comments=self.comment_count(n), review_comments=0, maintainer_can_modify=False,
            **self._pull_stats(issue, head, base),
        )
        return data

    def pull_minimal(self, issue: Issue) -> dict[str, Any]:
        """The pull-request-minimal shape used inside check runs and workflow runs."""
        st = self.state
        ident = stable_id("pull", f"{st.full_name}#{issue.number}")
        repo = {"id": stable_id("repo", st.full_name), "url": self.repo_api, "name": st.name}
        return {"id": ident, "number": issue.number, "url": f"{self.repo_api}/pulls/{issue.number}",
                "head": {"ref": issue.head, "sha": st.head_sha(issue), "repo": repo},
                "base": {"ref": issue.base, "sha": st.base_sha(issue), "repo": repo}}

    def pulls_with_head(self, sha: str) -> list[dict[str, Any]]:
        """Open, same-repository pulls whose head is sha (GitHub leaves fork pulls out of these lists).

        Found once per request and sha, each head branch looked up once (a Shapes serves one request, under the
        state's lock): a list of runs names one head for many runs, and each PR's head is a git lookup."""
        found: dict[str, list[dict[str, Any]]] = self.__dict__.setdefault("_pulls_with_head", {})
        if sha not in found:
            heads: dict[tuple[str | None, str], str] = {}
            for i in self.state.issues.values():
                if i.is_pull and i.state == "open" and not i.fork and (i.pinned_head_sha, i.head) not in heads:
                    heads[(i.pinned_head_sha, i.head)] = self.state.head_sha(i)
            found[sha] = [self.pull_minimal(i) for i in self.state.issues.values() if i.is_pull and i.state == "open"
                          and not i.fork and heads[(i.pinned_head_sha, i.head)] == sha]
        return [dict(p) for p in found[sha]]

    def review(self, r: Review) -> dict[str, Any]:
        pr = f"{self.repo_api}/pulls/{r.pull}"
        web = f"{self.repo_web}/pull/{r.pull}#pullrequestreview-{r.id}"
        return {"id": r.id, "node_id": node_id("PullRequestReview", r.id), "user": self.simple_user(r.user),
                "body": r.body, "state": r.state, "html_url": web, "pull_request_url": pr,
                "_links": {"html": {"href": web}, "pull_request": {"href": pr}}, "submitted_at": r.submitted,
                "commit_id": r.commit_id, "author_association": self.state.association(r.user)}
