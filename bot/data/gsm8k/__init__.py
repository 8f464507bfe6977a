"""GSM8K test and train splits (MIT, OpenAI); see README.md and LICENSE here."""
