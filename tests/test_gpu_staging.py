"""scripts/gpu/README.md's four steps, run in order from a clean checkout; only the transfers are stand-ins.

The two transfers are what this machine cannot do in a test: pip's download from PyPI (served here
from wheels the test builds) and the copy of each part onto the GPU host (a second folder here).
Everything else runs as the README says: stage-vllm.sh, the printed commands, `recipe-bot plan`
into separate folders, and remote-run.sh (assembling, installing, running the packed jobs only).
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "scripts" / "gpu" / "README.md"

FAKE_PIP = r'''
"""pip's `download` and `index versions`, served from $FAKE_INDEX (the PyPI transfer, stubbed)."""
import os, shutil, sys
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
index = os.environ["FAKE_INDEX"]
wheels = [(parse_wheel_filename(f), f) for f in os.listdir(index) if f.endswith(".whl")]
args = sys.argv[1:]
if args[:2] == ["index", "versions"]:
    name = canonicalize_name(args[-1])
    found = sorted(str(w[1]) for w, _ in wheels if w[0] == name)
    print("Available versions: " + ", ".join(found)); sys.exit(0)
assert args[0] == "download", args
dest = args[args.index("-d") + 1]
specs = [a for a in args[args.index("-d") + 2:]]
for spec in specs:
    req = Requirement(spec)
    hits = [f for (n, v, *_), f in wheels if n == canonicalize_name(req.name) and req.specifier.contains(v)]
    if not hits:
        print(f"ERROR: No matching distribution found for {spec}", file=sys.stderr); sys.exit(1)
    shutil.copy(os.path.join(index, sorted(hits)[-1]), dest)
'''

VLLM_STUB = "import sys\n\ndef main():\n    print('vllm stand-in: no GPU here', file=sys.stderr)\n    sys.exit(1)\n"


def make_wheel(index: Path, name: str, version: str, *, requires: list[str] = (), payload: int = 0,
               console: str | None = None) -> Path:
    """A real, installable wheel: METADATA, WHEEL, RECORD, optionally a console script and a big file."""
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    files = {f"{name.replace('-', '_')}/__init__.py": VLLM_STUB if console else ""}
    if payload:
        files[f"{name.replace('-', '_')}/blob.bin"] = os.urandom(payload)
    files[f"{dist}/METADATA"] = "Metadata-Version: 2.1\nName: {}\nVersion: {}\n{}".format(
        name, version, "".join(f"Requires-Dist: {r}\n" for r in requires))
    files[f"{dist}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    if console:
        files[f"{dist}/entry_points.txt"] = f"[console_scripts]\n{console} = {name.replace('-', '_')}:main\n"
    record = []
    for path, data in files.items():
        raw = data if isinstance(data, bytes) else data.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(raw).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(raw)}")
    files[f"{dist}/RECORD"] = "\n".join(record + [f"{dist}/RECORD,,"]) + "\n"
    wheel = index / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def clean_checkout(dest: Path) -> Path:
    """The repository's files as a fresh clone has them: nothing ignored (.engine, .stage, .upstream) comes along."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    return dest


def readme_plan_commands() -> list[str]:
    """Step 3's `recipe-bot plan` commands exactly as the README writes them."""
    step = README.read_text(encoding="utf-8").split("3. **Plan the jobs**")[1].split("4. **Run them**")[0]
    return [" ".join(c.split()) for c in re.findall(r"`(recipe-bot plan [^`]+)`", step, re.S)]


def shim_bin(tmp: Path) -> Path:
    """python3 of the GPU host (which has recipe-bot's dependencies): this interpreter."""
    bin_dir = tmp / "hostbin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} \"$@\"\n")
    (bin_dir / "python3").chmod(0o755)
    return bin_dir


def stage_venv(tmp: Path, index: Path) -> Path:
    """stage-vllm.sh's VENV: this interpreter (it has packaging), with pip's downloads served from `index`."""
    venv = tmp / "stage-venv"
    (venv / "bin").mkdir(parents=True)
    (tmp / "fakepip.py").write_text(FAKE_PIP)
    (venv / "bin" / "python").write_text(
        "#!/bin/bash\n"
        f'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then shift 2; exec {shlex.quote(sys.executable)} '
        f'{shlex.quote(str(tmp / "fakepip.py"))} "$@"; fi\n'
        f'exec {shlex.quote(sys.executable)} "$@"\n')
    (venv / "bin" / "python").chmod(0o755)
    return venv


def test_the_readme_plans_packed_and_unpacked_jobs_into_separate_folders():
    commands = readme_plan_commands()
    folders = [re.search(r"--jobs-dir (\S+)", c).group(1) for c in commands]
    assert len(commands) == 2 and len(set(folders)) == 2
    assert "--no-pack" in commands[1] and "--no-pack" not in commands[0]
    step4 = README.read_text(encoding="utf-8").split("4. **Run them**")[1]
    assert f"remote-run.sh {folders[0]}*.json" in step4  # step 4 runs one folder, never both


def test_step_1_names_the_set_up_that_makes_the_tokenizer_dir():
    step1 = README.read_text(encoding="utf-8").split("1. **Locally**")[1].split("2. **Send the parts**")[0]
    assert "scripts/setup-cpu-engine.sh" in step1 and ".engine/tiny-model" in step1


def test_the_gpu_staging_steps_run_in_order_from_a_clean_checkout(tmp_path):
    repo = clean_checkout(tmp_path / "checkout")
    index = tmp_path / "index"
    index.mkdir()
    make_wheel(index, "vllm", "0.26.0", requires=["tinydep>=1", "torch>=2"], console="vllm")  # torch: on the host
    make_wheel(index, "tinydep", "1.2", payload=3_200_000)  # bigger than a part: split, then reassembled
    tokenizer = tmp_path / "tokenizer"
    tokenizer.mkdir()
    (tokenizer / "tokenizer.json").write_text(json.dumps({"model": {"vocab": {"a": 0, "b": 1}}, "added_tokens": []}))
    (tokenizer / "tokenizer_config.json").write_text("{}")
    env = {**os.environ, "PART_MIB": "2", "TOKENIZER_DIR": str(tokenizer), "VENV": str(stage_venv(tmp_path, index)),
           "FAKE_INDEX": str(index)}

    # Step 1: stage, as the README writes it.
    subprocess.run("mkdir -p .git/info && echo /.stage/ >> .git/info/exclude", shell=True, cwd=repo, check=True)
    staged = subprocess.run(["bash", "scripts/gpu/stage-vllm.sh", ".stage"], cwd=repo, env=env,
                            capture_output=True, text=True, timeout=300)
    assert staged.returncode == 0, staged.stderr
    lines = [line for line in staged.stdout.splitlines() if re.match(r"p\d\d ", line)]
    assert len(lines) >= 2
    carries = [json.loads(re.search(r"carry: (\[.*?\])", line).group(1)) for line in lines]
    assert carries[0] == [".stage/p01", ".stage/model"]  # the model directory travels with p01
    assert all(c == [f".stage/p{i:02d}"] for i, c in enumerate(carries[1:], 2))
    assert (repo / ".stage" / "model" / "config.json").is_file()

    # Step 2: each part to the host, one command each; the copy itself is the stand-in.
    host = tmp_path / "host"
    stage = tmp_path / "stage"
    for line, carry in zip(lines, carries):
        if host.exists():
            shutil.rmtree(host)
        shutil.copytree(repo, host, ignore=shutil.ignore_patterns(".stage"))
        for path in carry:
            shutil.copytree(repo / path, host / path)
        command = line.split("command: ", 1)[1].replace("/tmp/stage", str(stage))
        subprocess.run(command, shell=True, cwd=host, check=True)
    assert (stage / "p01" / "stage-vllm.sh").is_file() and (stage / "model" / "config.json").is_file()

    # Step 3: plan here, packed and unpacked in separate folders, as the README writes it.
    for command in readme_plan_commands():
        argv = shlex.split(command)
        result = subprocess.run([sys.executable, "-m", "bot", *argv[1:]], cwd=repo, capture_output=True, text=True,
                                env={**os.environ, "PYTHONPATH": str(repo)}, timeout=120)
        assert result.returncode == 0, result.stderr
    packed = sorted(p.stem for p in (repo / "jobs" / "packed").glob("*.json"))
    unpacked = sorted(p.stem for p in (repo / "jobs" / "unpacked").glob("*.json"))
    assert packed and unpacked and not set(packed) & set(unpacked)

    # Step 4: there, run one folder; remote-run assembles and installs the parts, then runs each job.
    shutil.copytree(repo / "jobs", host / "jobs")
    out = tmp_path / "out"
    run_env = {**os.environ, "STAGE": str(stage), "SITE": str(tmp_path / "site"), "OUT": str(out),
               "PATH": f"{shim_bin(tmp_path)}:{os.environ['PATH']}"}
    run_env.pop("PYTHONPATH", None)
    ran = subprocess.run(f"bash scripts/gpu/remote-run.sh jobs/packed/*.json", shell=True, cwd=host, env=run_env,
                         capture_output=True, text=True, timeout=600)
    assert "assembled 2 wheels OK" in ran.stdout, ran.stdout + ran.stderr
    assert (tmp_path / "site" / "tinydep" / "blob.bin").stat().st_size == 3_200_000  # split parts joined back
    assert sorted(p.name.removesuffix(".result.json") for p in out.glob("*.result.json")) == packed
    for name in packed:
        result = json.loads((out / f"{name}.result.json").read_text())
        assert result["job_id"] == name and result["status"] == "failed"  # the vLLM stand-in cannot serve
