"""`python -m github_sandbox`: the same command as the `github-sandbox` script."""
from .cli import run

run()
