#!/usr/bin/env bash
# Stop the cluster that slurm-up.sh started, by the PIDs in the daemons' pidfiles.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec python3 "$root/bot/runner/slurm/cluster.py" down "$@"
