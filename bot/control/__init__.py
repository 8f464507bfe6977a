"""The control plane: events in, commands parsed, trust decided, GPU work dispatched."""
