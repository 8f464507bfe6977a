"""A stand-in for the `vllm` package: only what bot/runner/vllm_bench_driver.py imports."""
