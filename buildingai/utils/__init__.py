"""Small tools around a run: the state of the code it ran (``git_info``) and the optional
libraries it can use (``require``)."""

from .extras import MissingExtraError, require
from .git import git_info

__all__ = ["MissingExtraError", "git_info", "require"]
