"""Commits, diffs, comparisons, contents, refs, branches and commit statuses, read from the git repository."""
from __future__ import annotations

import base64
from typing import Any
from urllib.parse import quote

from ..gitrepo import FileChange, TreeEntry
from ..state import Status
from .base import ShapesBase, node_id


class CodeShapes(ShapesBase):
    def commit(self, sha: str, *, files: bool = False) -> dict[str, Any]:
        info = self.state.git.commit(sha)
        url = f"{self.repo_api}/commits/{sha}"
        data: dict[str, Any] = {
            "url": url, "sha": sha, "node_id": node_id("Commit", sha[:12]), "html_url": f"{self.repo_web}/commit/{sha}",
            "comments_url": f"{url}/comments",
            "commit": {
                "url": f"{self.repo_api}/git/commits/{sha}",
                "author": {"name": info.author.name, "email": info.author.email, "date": info.author.date},
                "committer": {"name": info.committer.name, "email": info.committer.email, "date": info.committer.date},
                "message": info.message, "comment_count": 0,
                "tree": {"sha": info.tree, "url": f"{self.repo_api}/git/trees/{info.tree}"},
                "verification": {"verified": False, "reason": "unsigned", "payload": None, "signature": None,
                                 "verified_at": None},
            },
            "author": self.user_for_email(info.author.email),
            "committer": self.user_for_email(info.committer.email),
            "parents": [{"sha": p, "url": f"{self.repo_api}/commits/{p}", "html_url": f"{self.repo_web}/commit/{p}"}
                        for p in info.parents],
        }
        if files:
            parent = info.parents[0] if info.parents else "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # the empty tree
            changes = self.state.git.diff(parent, sha)
            adds, dels = sum(c.additions for c in changes), sum(c.deletions for c in changes)
            data["stats"] = {"additions": adds, "deletions": dels, "total": adds + dels}
            data["files"] = [self.diff_entry(c, sha) for c in changes]
        return data

    def diff_entry(self, change: FileChange, head_sha: str) -> dict[str, Any]:
        path = quote(change.filename)
        data: dict[str, Any] = {
            "sha": change.blob_sha, "filename": change.filename, "status": change.status,
            "additions": change.additions, "deletions": change.deletions,
            "changes": change.additions + change.deletions,
            "blob_url": f"{self.repo_web}/blob/{head_sha}/{path}", "raw_url": f"{self.repo_web}/raw/{head_sha}/{path}",
            "contents_url": f"{self.repo_api}/contents/{path}?ref={head_sha}",
        }
        if change.patch is not None:
            data["patch"] = change.patch
        if change.previous_filename:
            data["previous_filename"] = change.previous_filename
        return data

    def comparison(self, basehead: str, base: str, head: str) -> dict[str, Any]:
        git = self.state.git
        merge_base = git.merge_base(base, head) or base
        ahead, behind = git.counts(base, head)
        status = "identical" if ahead == behind == 0 else "ahead" if behind == 0 else "behind" if ahead == 0 else "diverged"
        commits = list(reversed(git.rev_list(f"{merge_base}..{head}")))
        url = f"{self.repo_api}/compare/{basehead}"
        web = f"{self.repo_web}/compare/{basehead}"
        return {
            "url": url, "html_url": web, "permalink_url": f"{self.repo_web}/compare/{base}...{head}",
            "diff_url": f"{web}.diff", "patch_url": f"{web}.patch", "base_commit": self.commit(base),
            "merge_base_commit": self.commit(merge_base), "status": status, "ahead_by": ahead,
            "behind_by": behind, "total_commits": len(commits), "commits": [self.commit(c) for c in commits],
            "files": [self.diff_entry(c, head) for c in git.diff(merge_base, head)],
        }

    def _content_links(self, path: str, ref: str, sha: str, kind: str) -> dict[str, Any]:
        q = quote(path)
        url = f"{self.repo_api}/contents/{q}?ref={quote(ref, safe='')}"
        git_url = f"{self.repo_api}/git/{'trees' if kind == 'dir' else 'blobs'}/{sha}"
        html = f"{self.repo_web}/{'tree' if kind == 'dir' else 'blob'}/{ref}/{q}"
        return {"url": url, "git_url": git_url, "html_url": html,
                "download_url": f"{self.repo_web}/raw/{ref}/{q}" if kind == "file" else None,
                "_links": {"self": url, "git": git_url, "html": html}}

    def content_file(self, path: str, ref: str, sha: str, data: bytes) -> dict[str, Any]:
        encoded = base64.b64encode(data).decode()
        # GitHub wraps the base64 text at 60 columns; clients (PyGithub) decode it either way.
        wrapped = "\n".join(encoded[i:i + 60] for i in range(0, len(encoded), 60)) + ("\n" if encoded else "")
        return {"type": "file", "encoding": "base64", "size": len(data), "name": path.rsplit("/", 1)[-1],
                "path": path, "content": wrapped, "sha": sha, **self._content_links(path, ref, sha, "file")}

    def content_entry(self, entry: TreeEntry, ref: str) -> dict[str, Any]:
        return {"type": entry.kind, "size": entry.size, "name": entry.name, "path": entry.path, "sha": entry.sha,
                **self._content_links(entry.path, ref, entry.sha, entry.kind)}

    def git_ref(self, full_ref: str, sha: str) -> dict[str, Any]:
        return {"ref": full_ref, "node_id": node_id("Ref", full_ref), "url": f"{self.repo_api}/git/{full_ref}",
                "object": {"type": "commit", "sha": sha, "url": f"{self.repo_api}/git/commits/{sha}"}}

    def branch(self, name: str, sha: str) -> dict[str, Any]:
        api = f"{self.repo_api}/branches/{quote(name)}"
        return {"name": name, "commit": self.commit(sha),
                "_links": {"html": f"{self.repo_web}/tree/{quote(name)}", "self": api},
                "protected": False, "protection": {}, "protection_url": f"{api}/protection"}

    def status(self, s: Status) -> dict[str, Any]:
        return {"url": f"{self.repo_api}/statuses/{s.sha}", "avatar_url": self.simple_user(s.creator)["avatar_url"],
                "id": s.id, "node_id": node_id("StatusContext", s.id), "state": s.state,
                "description": s.description, "target_url": s.target_url, "context": s.context,
                "created_at": s.created, "updated_at": s.updated, "creator": self.simple_user(s.creator)}

    def combined_status(self, ref: str, sha: str, latest: list[Status]) -> dict[str, Any]:
        states = {s.state for s in latest}
        if states & {"error", "failure"}:
            combined = "failure"
        elif not latest or "pending" in states:
            combined = "pending"
        else:
            combined = "success"
        simple = [{k: v for k, v in self.status(s).items() if k != "creator"} for s in latest]
        return {"state": combined, "statuses": simple, "sha": sha, "total_count": len(latest),
                "repository": self.repository(), "commit_url": f"{self.repo_api}/commits/{sha}",
                "url": f"{self.repo_api}/commits/{quote(ref, safe='')}/status"}
