"""Where the time goes: ``TimeTracer`` records every op with its module and phase, and writes
summaries, flame graphs, Chrome traces and speedscope profiles."""

from .summary import ProfileSummary
from .tracer import OpEvent, TimeTracer

__all__ = ["OpEvent", "ProfileSummary", "TimeTracer"]
