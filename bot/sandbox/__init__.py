"""A local stand-in for GitHub's REST API (`recipe-bot sandbox`): git-backed, seeded, checked against GitHub's OpenAPI.

Modules: seed (the seed file contract), gitrepo (the git backing), state (the mutable world), shapes (GitHub
JSON), api (one handler per operation), openapi (routing and validation), server (HTTP and the request log),
control (/_sandbox/ endpoints), workflows (dispatch inputs, run-name), webhooks (event payloads),
harness (tests and the demo), cli (the command). Documentation: docs/sandbox.md.
"""
