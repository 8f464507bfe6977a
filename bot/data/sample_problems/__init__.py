"""recipe-bot's own GSM8K-format problems (written for this project; not GSM8K). See README.md here."""
