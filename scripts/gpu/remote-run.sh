#!/usr/bin/env bash
# GPU-host side: install the staged engine (vLLM or SGLang) once per boot, then `recipe-bot run`
# each planned job given.
# Runs from the repository root on an offline GPU host whose staged parts are in $STAGE (see
# scripts/gpu/README.md). Each job's result directory comes back as $OUT/<job>.tar.gz plus its
# result.json as $OUT/<job>.result.json (a device's $OUT returns at most 8 files).
set -uo pipefail
STAGE=${STAGE:-/tmp/stage}
SITE=${SITE:-/tmp/site}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"

if [ ! -f "$SITE/.recipe-bot-installed" ]; then
  echo "[remote-run] assembling and installing the staged wheels from $STAGE"
  bash "$STAGE/p01/stage-vllm.sh" --assemble "$STAGE" || exit 1
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "$STAGE"/whl/*.whl || exit 1
  touch "$SITE/.recipe-bot-installed"
fi
if [ -d "$SITE/sglang" ] && [ ! -f "$SITE/.sglang-imports-ok" ]; then
  # The server's own import chain, so that a missing deferred wheel shows here, named, in seconds.
  PYTHONPATH="$SITE" python3 -c 'import sglang, sgl_kernel, flashinfer, transformers
import sglang.launch_server, sglang.srt.managers.scheduler, sglang.srt.model_executor.model_runner
import sglang.srt.models.qwen3, sglang.bench_serving
print("sglang", sglang.__version__, "transformers", transformers.__version__)' \
    && touch "$SITE/.sglang-imports-ok" || echo "[remote-run] import probe failed (above); running anyway"
fi

export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
# NVLink multicast stays off on the lent hosts; the flashinfer sampler would JIT-compile for minutes.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
[ -x "$SITE/bin/vllm" ] && export RECIPE_BOT_VLLM="$SITE/bin/vllm"
export RECIPE_BOT_SGLANG_PYTHON=python3   # with $SITE on PYTHONPATH: the staged SGLang
export RECIPE_BOT_GPU_SMOKE_MODEL="${RECIPE_BOT_GPU_SMOKE_MODEL:-$STAGE/model}"
export RECIPE_BOT_GSM8K_OFFLINE=1

status=0
for job in "$@"; do
  name=$(basename "$job" .json)
  dir="/tmp/results/$name"
  rm -rf "$dir"
  echo "[remote-run] $(date -u +%FT%TZ) running $job"
  python3 -m bot run --job "$job" --out "$dir" || status=1
  cp "$dir/result.json" "$OUT/$name.result.json" 2>/dev/null
  tar -C /tmp/results -czf "$OUT/$name.tar.gz" "$name"
done
nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv > "$OUT/nvidia-smi-after.csv" 2>&1
cat "$OUT/nvidia-smi-after.csv"
exit $status
