#!/usr/bin/env bash
# stage-sglang.sh: stage SGLang plus the wheels the offline GPU host lacks, as parts small enough that
# each fits one command's transfer (at most 64 MiB with the repository's own files). The packing,
# checksums and the GPU-host side (--assemble) are stage-vllm.sh's; this file holds SGLang's choices.
#
# Locally (project root; TARGET must be a folder that .git/info/exclude ignores):
#   mkdir -p .git/info && echo /.stage/ >> .git/info/exclude
#   TOKENIZER_DIR=.engine/tiny-model bash scripts/gpu/stage-sglang.sh .stage     # sglang==0.5.17
# Why 0.5.17: each SGLang release pins one torch; 0.5.17 is the newest whose pin (torch==2.11.0,
# torchaudio==2.11.0) is the GPU host's own torch 2.11.0+cu130, so torch does not travel (0.5.18-0.5.21
# pin 2.13.0, 0.5.22-0.5.23 pin 2.14.1). Its other exact pin that the host breaks, transformers==5.12.1
# (host: 5.17.0), travels (FORCE), with the tokenizers it accepts (<=0.23.0; host: 0.23.2). Measured 2026-12-01: docs/gpu-runs/2026-12-01-sglang/README.md.
# Env: as stage-vllm.sh (PART_MIB, TOKENIZER_DIR, VENV), plus
#   DEFER  packed into trailing, optional parts: kernels a dense bf16 model on Hopper never imports
#          (Blackwell CuTe-DSL attention and GEMMs, FA4, MLA/DSA kernels, the CUDA compiler wheels:
#          the host has nvcc 13.0). Send them only if the server's import says one is missing.
#   FORCE  names fetched although the host has a version of them (resolve_wheels.py).
# Then, on the GPU host, the same steps as for vLLM: move each part to /tmp/stage, one command each,
# back to back; `scripts/gpu/remote-run.sh JOB...` assembles, installs and runs (README.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=${1:?usage: stage-sglang.sh TARGET_DIR [REQ...]}; shift
reqs=("$@"); [[ ${#reqs[@]} -gt 0 ]] || reqs=(sglang==0.5.17)
export FORCE=${FORCE:-"transformers tokenizers"}
export DEFER=${DEFER:-"tokenspeed-triton tokenspeed-mla nvidia-cutlass-dsl nvidia-cutlass-dsl-libs-base
 nvidia-cutlass-dsl-libs-core nvidia-cutlass-dsl-libs-cu12 nvidia-cutlass-dsl-libs-cu13 nvidia-nvvm
 nvidia-cuda-nvcc nvidia-cuda-nvdisasm nvidia-cuda-cccl nvidia-cuda-crt tilelang z3-solver torchcodec
 flash-attn-4 quack-kernels"}
exec bash "$here/stage-vllm.sh" "$target" "${reqs[@]}"
