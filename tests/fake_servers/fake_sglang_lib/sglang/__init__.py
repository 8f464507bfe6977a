"""A stand-in for the `sglang` package: its server and benchmark client, as sglang 0.5.17 lays them out."""
