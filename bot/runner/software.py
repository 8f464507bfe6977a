"""What software a job ran with: the installed plugin's path and version, driver, CUDA, torch, transformers."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Mapping

# Read by the job's own Python from package metadata, without importing torch (seconds, and a GPU
# context). A package that is not installed is None: recorded as absent, never guessed.
_PROBE = r"""
import json, sys
from importlib import metadata
def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
out = {"torch": version("torch"), "transformers": version("transformers"), "python": sys.version.split()[0]}
plugin = sys.argv[1] if len(sys.argv) > 1 else ""
if plugin:
    out["plugin"] = plugin
    out["plugin_version"] = version(plugin)
    path = None
    try:
        dist = metadata.distribution(plugin)
        direct = dist.read_text("direct_url.json")
        path = json.loads(direct).get("url") if direct else str(dist.locate_file(""))
    except metadata.PackageNotFoundError:
        pass
    out["plugin_path"] = path
print(json.dumps(out))
"""


def _nvidia_smi(args: list[str]) -> str | None:
    try:
        done = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def driver_and_cuda() -> dict[str, str | None]:
    """The NVIDIA driver and the CUDA version it supports, from nvidia-smi; None where there is none."""
    driver = _nvidia_smi(["--query-gpu=driver_version", "--format=csv,noheader"])
    header = _nvidia_smi([])
    cuda = re.search(r"CUDA Version:\s*([0-9.]+)", header or "")
    return {"driver": driver.strip().splitlines()[0] if driver and driver.strip() else None,
            "cuda": cuda.group(1) if cuda else None}


def software_versions(plugin: str | None, env: Mapping[str, str], python: str = sys.executable) -> dict[str, str | None]:
    found: dict[str, str | None] = {"torch": None, "transformers": None}
    if plugin:
        found.update(plugin=plugin, plugin_version=None, plugin_path=None)
    try:
        done = subprocess.run([python, "-c", _PROBE, plugin or ""], capture_output=True, text=True,
                              timeout=60, check=False, env=dict(env))
        if done.returncode == 0:
            found.update(json.loads(done.stdout.strip().splitlines()[-1]))
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        pass
    found.update(driver_and_cuda())
    return found
