"""The documentation site, built once for every test that reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from .site_build import build_site


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """The site built by ``mkdocs build --strict`` (``site_build.build_site``); tests read it
    and do not change it."""
    return build_site(tmp_path_factory.mktemp("site"))
