"""A progress bar with steps per second and time left: tqdm when it is installed, otherwise a
plain single line redrawn in place (``\\r``) at most a few times a second."""

from __future__ import annotations

import sys
import time
from typing import IO, Any


def _duration(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):  # NaN or infinite: unknown yet
        return "?"
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes:02d}:{seconds:02d}"


def _format(values: dict[str, Any]) -> str:
    return ", ".join(
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items()
    )


class PlainProgress:
    """``desc  120/469 [ 25%] 41.3 steps/s ETA 00:08 loss=0.31`` on one line."""

    def __init__(self, total: int | None, desc: str = "", file: IO[str] | None = None,
                 initial: int = 0, min_interval: float = 0.2) -> None:  # fmt: skip
        self.total, self.desc, self.n = total, desc, initial
        self.file = file if file is not None else sys.stderr
        self.min_interval = min_interval
        self.start = self.last_draw = time.perf_counter()
        self.start_n = initial
        self.postfix: dict[str, Any] = {}
        self.width = 0

    def line(self) -> str:
        elapsed = time.perf_counter() - self.start
        rate = (self.n - self.start_n) / elapsed if elapsed > 0 else float("nan")
        parts = [self.desc] if self.desc else []
        if self.total:
            parts.append(f"{self.n}/{self.total} [{100 * self.n / self.total:3.0f}%]")
            left = (self.total - self.n) / rate if rate > 0 else float("nan")
            parts.append(f"{rate:.1f} steps/s ETA {_duration(left)}")
        else:
            parts.append(f"{self.n} steps, {rate:.1f} steps/s, {_duration(elapsed)}")
        if self.postfix:
            parts.append(_format(self.postfix))
        return "  ".join(parts)

    def _draw(self) -> None:
        text = self.line()
        # Pad with spaces so a shorter line fully covers the previous one.
        self.file.write("\r" + text.ljust(self.width))
        self.file.flush()
        self.width = len(text)
        self.last_draw = time.perf_counter()

    def update(self, n: int = 1) -> None:
        self.n += n
        if time.perf_counter() - self.last_draw >= self.min_interval:
            self._draw()

    def set_postfix(self, values: dict[str, Any]) -> None:
        self.postfix = dict(values)

    def write(self, text: str) -> None:
        """Print ``text`` on its own line above the bar."""
        self.file.write("\r" + text.ljust(self.width) + "\n")
        self._draw()

    def close(self) -> None:
        self._draw()
        self.file.write("\n")
        self.file.flush()


class _TqdmProgress:
    def __init__(self, total, desc, file, initial) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc=desc, file=file, initial=initial, unit="step",
                        dynamic_ncols=True, leave=True)  # fmt: skip

    def update(self, n: int = 1) -> None:
        self.bar.update(n)

    def set_postfix(self, values: dict[str, Any]) -> None:
        self.bar.set_postfix_str(_format(values), refresh=False)

    def write(self, text: str) -> None:
        self.bar.write(text, file=self.bar.fp)

    def close(self) -> None:
        self.bar.close()


class SilentProgress:
    """What ``progress(enabled=False)`` returns: does nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix(self, values: dict[str, Any]) -> None:
        pass

    def write(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def close(self) -> None:
        pass


def progress(total: int | None, desc: str = "", *, enabled: bool = True, initial: int = 0,
             file: IO[str] | None = None, use_tqdm: bool | None = None):  # fmt: skip
    """A progress bar over ``total`` steps: ``update(n)``, ``set_postfix(dict)``, ``close()``.

    ``use_tqdm=None`` picks tqdm when installed; ``enabled=False`` gives a silent bar.
    """
    if not enabled:
        return SilentProgress()
    if use_tqdm is None:
        try:
            import tqdm  # noqa: F401

            use_tqdm = True
        except ImportError:
            use_tqdm = False
    if use_tqdm:
        return _TqdmProgress(total, desc, file, initial)
    return PlainProgress(total, desc, file=file, initial=initial)
