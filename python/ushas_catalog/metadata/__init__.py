"""Business and system metadata of catalog objects, its sync from commits (a commit-hook subscriber)
and search over it."""
