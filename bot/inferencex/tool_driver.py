"""Runs InferenceX's generator CLI once per config key in one interpreter; executed by own_tools, never imported.

The generator prints a JSON list of rows for `test-config --config-keys KEY ...`; run once per key it says
which rows each config makes, which the changelog processor's output does not (its rows carry no key).
One interpreter for every key spares a Python start-up per key. Only the standard library is used here:
this file runs under the tool's Python, in the tool's sandbox, beside the tool's own imports.
"""
import contextlib
import io
import json
import os
import runpy
import sys


def main() -> None:
    script, jobs_path = sys.argv[1], sys.argv[2]
    with open(jobs_path, encoding="utf-8") as handle:
        jobs = json.load(handle)  # config key -> the generator's arguments
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `python3 SCRIPT` would have it
    printed = {}
    for key, argv in jobs.items():
        buffer = io.StringIO()
        sys.argv = [script, *argv]
        with contextlib.redirect_stdout(buffer):
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as exc:
                if exc.code not in (0, None):
                    raise
        printed[key] = buffer.getvalue()
    sys.stdout.write(json.dumps(printed))


if __name__ == "__main__":
    main()
