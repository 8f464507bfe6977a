"""`scripts/rehearse-workflows [CASE ...]`: rehearse the shipped workflows under act, inside a loopback-only network."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from .cases import CASES, run_case
from .stage import ROOT, StageError, locked_dependencies, wheelhouse

NETWORK_HINT = ("the rehearsal runs inside a network namespace with only loopback (`unshare -n`, as root): "
                "run it as root, or in a container started with --cap-add SYS_ADMIN")


def engine_env() -> dict[str, str]:
    """The CPU engine the cpu runner label's jobs use (scripts/setup-cpu-engine.sh), if it is installed."""
    from bot.core.settings import load_settings
    from bot.engines import engine_dir
    from bot.engines.vllm import ENGINE as VLLM

    settings = load_settings()
    vllm = VLLM.locate(ROOT, os.environ, settings)
    model = Path(settings.TINY_MODEL or engine_dir(ROOT, settings) / "tiny-model")
    if vllm is None or not (model / "config.json").is_file():
        return {}
    return {"RECIPE_BOT_VLLM": vllm, "RECIPE_BOT_TINY_MODEL": str(model)}


def only_loopback() -> list[str]:
    """The network interfaces here other than lo (none inside the rehearsal's namespace); /proc/net/dev is the
    process's own namespace's list (/sys/class/net is the namespace's that mounted /sys)."""
    lines = Path("/proc/net/dev").read_text(encoding="utf-8").splitlines()[2:]
    return sorted(name for name in (line.split(":", 1)[0].strip() for line in lines) if name != "lo")


def _inside(args: argparse.Namespace) -> int:
    others = only_loopback()
    if others:
        print(f"[rehearsal] refusing to run with network interfaces {others}: {NETWORK_HINT}", file=sys.stderr)
        return 2
    engine = engine_env()
    edits = {}
    for path, old, new in args.replace or []:
        def change(text: str, old: str = old, new: str = new, path: str = path) -> str:
            if text.count(old) != 1:
                raise SystemExit(f"--replace {path}: {old!r} occurs {text.count(old)} times, not once")
            return text.replace(old, new)
        edits[path] = change
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.work:
        Path(args.work).mkdir(parents=True, exist_ok=True)
    results = {}
    for name in args.cases:
        case = CASES[name]
        print(f"\n[rehearsal] case {name}: {case.doc}", flush=True)
        if case.engine and not engine:
            results[name] = {"passed": False, "problems": ["the CPU engine is not installed: "
                                                           "scripts/setup-cpu-engine.sh"], "facts": {}}
            print(f"[rehearsal] {name}: FAILED: {results[name]['problems'][0]}", flush=True)
            continue
        work = Path(tempfile.mkdtemp(prefix=f"rehearsal-{name}-", dir=args.work))
        started = time.monotonic()
        try:
            expect = run_case(case, work, engine=engine, main_edits=edits, fresh_installs=args.fresh_installs,
                              say=lambda text: print(f"  {text}", flush=True))
            problems, facts = expect.problems, expect.facts
        except Exception as exc:  # a bug of the rehearsal itself: keep going, the case fails with its traceback
            problems, facts = [f"the rehearsal broke: {exc!r}\n{traceback.format_exc()}"], {}
        passed = not problems
        results[name] = {"passed": passed, "problems": problems, "facts": facts,
                         "seconds": round(time.monotonic() - started, 1), "work": str(work)}
        verdict = "passed" if passed else "FAILED:\n    " + "\n    ".join(problems)
        print(f"[rehearsal] {name}: {verdict} ({results[name]['seconds']} s)", flush=True)
        if passed and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    return 0 if all(r["passed"] for r in results.values()) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/rehearse-workflows", description=__doc__)
    parser.add_argument("cases", nargs="*", help=f"cases to run (default: all): {', '.join(CASES)}")
    parser.add_argument("--list", action="store_true", help="list the cases and what each asserts")
    parser.add_argument("--out", default=str(ROOT / "out" / "rehearsal"), help="where results.json goes")
    parser.add_argument("--work", default=None, help="where each case's sandbox, act logs and artifacts go")
    parser.add_argument("--keep", action="store_true", help="keep the work folders of cases that passed")
    parser.add_argument("--replace", nargs=3, action="append", metavar=("PATH", "OLD", "NEW"),
                        help="edit a file of the rehearsed default branch (e.g. a workflow) before the run")
    parser.add_argument("--fresh-installs", action="store_true",
                        help="every job installs the lock's wheels into its venv, as on GitHub (about 40 s a job)")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.list:
        for case in CASES.values():
            print(f"{case.name:18} {case.doc}{' (CPU engine)' if case.engine else ''}")
        return 0
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; the cases are: {', '.join(CASES)}")
    args.cases = args.cases or list(CASES)
    if args.inside:
        return _inside(args)
    try:
        # needs the package index once, so before the network goes away
        wheelhouse() if args.fresh_installs else locked_dependencies()
    except StageError as exc:
        print(f"[rehearsal] {exc}", file=sys.stderr)
        return 2
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        print(f"[rehearsal] unshare or ip is missing: {NETWORK_HINT}", file=sys.stderr)
        return 2
    inner = [sys.executable, "-m", "rehearsal", "--inside", *sys.argv[1:]] if argv is None else \
        [sys.executable, "-m", "rehearsal", "--inside", *argv]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    proc = subprocess.run(["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "rehearse", *inner],
                          env=env)
    if proc.returncode not in (0, 1):
        print(f"[rehearsal] could not enter a loopback-only network namespace (exit {proc.returncode}): "
              f"{NETWORK_HINT}", file=sys.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
