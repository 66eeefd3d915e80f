"""Tools for finding out what went wrong: gradient checks (more to come: NaN provenance,
anomaly detection)."""

from .gradcheck import gradcheck, gradgradcheck
