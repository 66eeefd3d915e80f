"""The release number, on the bottom floor so that every floor may report it."""

__version__ = "0.1.0"
