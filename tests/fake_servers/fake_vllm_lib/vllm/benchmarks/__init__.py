"""vllm.benchmarks of the stand-in package."""
