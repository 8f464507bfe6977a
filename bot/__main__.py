"""`python -m bot ...` is `recipe-bot ...` (for hosts where the entry point is not installed)."""
from bot.cli import main

main(prog_name="recipe-bot")
