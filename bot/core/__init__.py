"""What every stage shares: events, commands, markers, jobs, results, config, the GitHub client, messages."""
