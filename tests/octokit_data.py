"""octokit's webhook examples and JSON schemas, read from the pinned npm packages (never copied into tests/)."""
from __future__ import annotations

import copy
import json
from functools import lru_cache
from typing import Any

from jsonschema import Draft7Validator

from github_sandbox import upstream
from github_sandbox.webhooks import Example, example_payload


@lru_cache(maxsize=1)
def definitions() -> dict[str, Any]:
    """`@octokit/webhooks-schemas`' schema.json: one definition per `event$action`, sharing `#/definitions/...`."""
    path = upstream.package_dir(upstream.WEBHOOK_SCHEMAS) / "schema.json"
    return json.loads(path.read_text(encoding="utf-8"))["definitions"]


def schema_errors(event: str, action: str, payload: dict[str, Any]) -> list[str]:
    """What octokit's schema for `event`/`action` says is wrong with `payload` (empty: valid)."""
    defs = definitions()
    schema = defs.get(f"{event}${action}")
    if schema is None:  # an action octokit has no schema for: the opened shape with this action
        schema = copy.deepcopy(defs[f"{event}$opened"])
        schema["properties"]["action"] = {"type": "string", "enum": [action]}
    root = {**schema, "definitions": defs}
    errors = Draft7Validator(root).iter_errors(payload)
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in errors]


def payload(event: str, action: str) -> dict[str, Any]:
    """octokit's fullest example of `event`/`action`, with or without an organization."""
    return example_payload(Example(event, action, organization=False))


# The plain examples tests/test_events.py parses (the sandbox's own choices are github_sandbox.webhooks.TEMPLATES).
EVENT_TEST_EXAMPLES = tuple(Example(e, a, organization=False) for e, a in (
    ("issue_comment", "created"), ("issue_comment", "edited"), ("pull_request_review", "submitted"),
    *(("pull_request", a) for a in ("opened", "reopened", "synchronize", "closed", "labeled", "unlabeled"))))


def used_examples() -> list[Example]:
    """Every octokit example recipe-bot's code or tests start from."""
    from github_sandbox.webhooks import TEMPLATES
    return sorted(set(TEMPLATES.values()) | set(EVENT_TEST_EXAMPLES), key=repr)
