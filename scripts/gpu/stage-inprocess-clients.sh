#!/usr/bin/env bash
# stage-inprocess-clients.sh: stage vLLM and SGLang side by side for the in-process client run of
# docs/gpu-runs/2026-12-02-inprocess-clients/ (issue #38, items 2 and 3), and print the device
# commands in the order to send them, back to back (the host goes back after 30 s idle).
#
# Run it in the checkout that the device tool copies (repository root), once:
#   bash scripts/gpu/stage-inprocess-clients.sh            # writes .stage/vllm and .stage/sglang
# Each part is carried by its own command, which moves it out of the tree (the next command's copy
# deletes ignored paths an earlier one sent in). vLLM goes to /tmp/stage-v and /tmp/site-v, SGLang
# to /tmp/stage-s and /tmp/site-s: the two pin different transformers, so they never share a site.
# The jobs travel as tracked files: docs/gpu-runs/2026-12-02-inprocess-clients/jobs/.
set -euo pipefail
cd "$(dirname "$0")/../.."
exclude="$(git rev-parse --git-common-dir)/info/exclude"
grep -qx '/.stage/' "$exclude" 2>/dev/null || { mkdir -p "$(dirname "$exclude")"; echo /.stage/ >> "$exclude"; }
tokenizer=${TOKENIZER_DIR:-.engine/tiny-model}
[[ -d .stage/vllm/p01 ]] || PART_MIB=${PART_MIB:-50} TOKENIZER_DIR=$tokenizer bash scripts/gpu/stage-vllm.sh .stage/vllm >&2
[[ -d .stage/sglang/p01 ]] || PART_MIB=${PART_MIB:-50} TOKENIZER_DIR=$tokenizer bash scripts/gpu/stage-sglang.sh .stage/sglang >&2
jobs=docs/gpu-runs/2026-12-02-inprocess-clients/jobs
run() {  # STAGE SITE INPROCESS JOB: the remote-run.sh command of one job
  echo "STAGE=$1 SITE=$2 RECIPE_BOT_INPROCESS_CLIENT=$3 bash scripts/gpu/remote-run.sh $jobs/$4.json"
}
parts() {  # ENGINE DEST: the needed parts' commands from parts.txt, moved to DEST
  grep ' needed ' ".stage/$1/parts.txt" | sed "s#^.*carry: #carry #; s#/tmp/stage/\$#$2/#; s#mkdir -p /tmp/stage #mkdir -p $2 #"
}
echo "# vLLM: parts, then the case's client in process, a process a point, and the search with the dense grid"
parts vllm /tmp/stage-v
echo "command: $(run /tmp/stage-v /tmp/site-v 1 vllm-clients)      # results -> results/vllm-1-in-process"
echo "command: $(run /tmp/stage-v /tmp/site-v 0 vllm-clients)      # results -> results/vllm-2-per-point"
echo "command: $(run /tmp/stage-v /tmp/site-v 1 vllm-search)       # results -> results/vllm-3-search"
echo "# SGLang: parts, then in process and a process a point"
parts sglang /tmp/stage-s
echo "command: $(run /tmp/stage-s /tmp/site-s 1 sglang-clients)    # results -> results/sglang-1-in-process"
echo "command: $(run /tmp/stage-s /tmp/site-s 0 sglang-clients)    # results -> results/sglang-2-per-point"
