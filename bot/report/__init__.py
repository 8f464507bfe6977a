"""The report stage: collect job results, compare with the base branch, render, chart and post."""
