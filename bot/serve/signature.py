"""X-Hub-Signature-256: HMAC-SHA256 of the raw body with the App's webhook secret, compared in constant time."""
from __future__ import annotations

import hashlib
import hmac

PREFIX = "sha256="


def sign(secret: str | bytes, body: bytes) -> str:
    """The header value GitHub sends for `body` (tests and the sandbox sign with this too)."""
    key = secret.encode() if isinstance(secret, str) else secret
    return PREFIX + hmac.new(key, body, hashlib.sha256).hexdigest()


def verify(secret: str | bytes, body: bytes, header: str | None) -> bool:
    """True only for a well-formed header whose digest matches; never short-circuits on the digest."""
    if not header or not header.startswith(PREFIX):
        return False
    return hmac.compare_digest(sign(secret, body).encode(), header.strip().encode())
