"""`recipe-bot demo`: the whole loop on this machine, from a `/sweep` comment to the bilingual report."""
from bot.demo.cli import demo_cmd

__all__ = ["demo_cmd"]
