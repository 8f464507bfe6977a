"""recipe-bot: from a PR comment to GPU benchmark runs and one bilingual report."""

__version__ = "0.1.0"
