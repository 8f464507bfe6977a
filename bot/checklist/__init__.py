"""The PR_REVIEW_CHECKLIST sign-off: find it in a comment, check it by rules, report it per head SHA."""
