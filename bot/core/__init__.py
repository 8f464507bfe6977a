"""What every stage shares."""
