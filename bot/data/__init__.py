"""Data files written for recipe-bot (third-party data is installed, never shipped: see README.md)."""
