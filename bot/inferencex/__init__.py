"""InferenceX compatibility: its configs read unchanged, its matrix rows reproduced exactly."""
