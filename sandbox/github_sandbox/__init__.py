"""A local stand-in for GitHub's REST API (`github-sandbox`): git-backed, seeded, checked against GitHub's OpenAPI.

Modules: seed (the seed file contract), gitrepo (the git backing), state (the mutable world), shapes (GitHub
JSON), api (one handler per operation), openapi (routing and validation), server (HTTP and the request log),
control (/_sandbox/ endpoints), workflows (dispatch inputs, run-name), webhooks (event payloads),
harness (tests drive it from Python), cli and tools (the `github-sandbox` command).
Its own distribution (sandbox/pyproject.toml): the bot never imports it; the demo runs it as a process. Documentation: docs/sandbox.md.
"""
