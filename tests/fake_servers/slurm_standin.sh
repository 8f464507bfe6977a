#!/usr/bin/env bash
# Launch script for the Slurm tests' stand-in server (the local backend runs it with bash when
# it is not executable, so the Python lives beside it).
exec python3 "$(dirname "$0")/slurm_standin.py" "$@"
