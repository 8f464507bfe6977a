"""InferenceX's placement rules for `router` and `kv-p2p-transfer`, on raw master-config entries (no pydantic)."""
from __future__ import annotations

from bot.core.messages import Message, msg


def component_scope_problem(entry: dict) -> Message | None:
    """InferenceX's rules for where `router` and `kv-p2p-transfer` go, on a raw master-config entry
    (its generator refuses the whole run for one entry that breaks them), in its words."""
    scenarios = entry.get("scenarios") if isinstance(entry.get("scenarios"), dict) else {}
    spaces = [e for blocks in scenarios.values() if isinstance(blocks, list) for block in blocks
              if isinstance(block, dict) for e in block.get("search-space") or [] if isinstance(e, dict)]
    if not any(scenarios.get(k) for k in ("fixed-seq-len", "agentic-coding")):
        return msg("At least one scenario type must be specified")
    for name in ("router", "kv-p2p-transfer"):
        if entry.get(name) is not None and any(e.get(name) is not None for e in spaces):
            return msg("%(name)s must be declared either at the top level or in search-space entries, not both", name=name)
    if entry.get("multinode") is not True and any(e.get("kv-p2p-transfer") is not None for e in spaces):
        return msg("kv-p2p-transfer is only valid when multinode=true")
    if entry.get("disagg") is True and entry.get("kv-p2p-transfer") is None and (
            not spaces or any(e.get("kv-p2p-transfer") is None for e in spaces)):
        return msg("disagg=true requires kv-p2p-transfer at the top level or in every search-space entry")
    return None
