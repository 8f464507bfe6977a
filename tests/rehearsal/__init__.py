"""Workflow rehearsal: recipe-bot.yml, gpu.yml and gpu-run.yml run by act against the sandbox, offline (docs/workflows.md)."""
