#!/usr/bin/env bash
# Start a single-node Slurm cluster with two fake GPUs on this machine (installs Debian's packages
# when missing; needs root). The steps live in bot/runner/slurm/cluster.py; stop it with slurm-down.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Run by path with any python3: this may run before recipe-bot's .venv exists, and the module
# needs only the standard library.
exec python3 "$root/bot/runner/slurm/cluster.py" up "$@"
