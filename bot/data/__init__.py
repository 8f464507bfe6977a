"""Data files shipped with recipe-bot (each folder carries its licence)."""
