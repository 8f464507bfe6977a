"""A stand-in for the `vllm` package: only what bot/runner/bench_driver.py imports."""
