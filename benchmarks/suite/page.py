"""``docs/benchmarks.md`` in parts: the synthetic suite's page, then regions between HTML comment
markers (the real training workloads, the scaling figures, the GPU check) that other commands
write. A run replaces the parts it measured and keeps the rest, so ``--only gpt`` does not erase
the MLP's table and a run of the synthetic workloads does not erase the real ones."""

from __future__ import annotations

import re

# (start, end) markers of the regions, in the order they follow the main page
REGIONS = (
    ("<!-- real-workloads -->", "<!-- /real-workloads -->"),
    ("<!-- scaling -->", "<!-- /scaling -->"),
    ("<!-- gpu -->", "<!-- /gpu -->"),
)


def split(text: str) -> tuple[str, dict[str, str]]:
    """The page without its regions, and each region's text (markers included) by start."""
    regions = {}
    for start, end in REGIONS:
        match = re.search(re.escape(start) + r".*?" + re.escape(end), text, flags=re.S)
        if match:
            regions[start] = match.group(0)
            text = text[: match.start()] + text[match.end() :]
    return text.rstrip() + "\n", regions


def compose(main: str | None, regions: dict[str, str], existing: str = "") -> str:
    """The page: ``main`` (else the existing page's main part), then each region from
    ``regions`` or, where this run did not write it, from ``existing``."""
    old_main, old_regions = split(existing)
    parts = [(main if main is not None else old_main).rstrip()]
    for start, _ in REGIONS:
        region = regions.get(start, old_regions.get(start))
        if region:
            parts.append(region.strip())
    return "\n\n".join(part for part in parts if part) + "\n"
