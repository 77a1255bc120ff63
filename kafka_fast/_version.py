"""The package version, defined in one place."""

__version__ = "0.1.0"
