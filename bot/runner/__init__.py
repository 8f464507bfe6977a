"""The runner: start engines, load them with their own client, score GSM8K, prove teardown."""
