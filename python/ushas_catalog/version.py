"""The version of ushas-catalog (pyproject.toml says the same; ``ushas --version`` prints it)."""
__version__ = "0.1.0"
