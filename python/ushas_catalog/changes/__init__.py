"""The change feed: an ordered log of the project's commits (a commit-hook subscriber)."""
