"""Text tools: a regex ``Tokenizer``, a ``Vocabulary`` mapping tokens to ids, ``pad_sequences``
and ``collate_sequences`` (a DataLoader ``collate_fn`` for variable-length id sequences)."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..autograd.tensor import Tensor
from ..errors import BuildingAIError
from .collate import default_collate

# A word (letters, digits, underscore; with inner apostrophes such as "don't") or one
# punctuation character.
_DEFAULT_PATTERN = r"\w+(?:['’]\w+)*|[^\w\s]"


class Tokenizer:
    """Split text into word and punctuation tokens.

    ``Tokenizer()("Don't panic, Bob!")`` -> ``["don't", "panic", ",", "bob", "!"]``. ``lower``
    lower-cases first; ``pattern`` is the regular expression whose matches are the tokens.
    """

    def __init__(self, lower: bool = True, pattern: str = _DEFAULT_PATTERN) -> None:
        self.lower = lower
        self.pattern = re.compile(pattern)

    def __call__(self, text: str) -> list[str]:
        if not isinstance(text, str):
            raise BuildingAIError(
                f"Tokenizer expects a str, got {type(text).__name__}",
                help="decode bytes first: text.decode('utf-8')",
            )
        return self.pattern.findall(text.lower() if self.lower else text)

    def batch(self, texts: Iterable[str]) -> list[list[str]]:
        return [self(text) for text in texts]


class Vocabulary:
    """A two-way map between tokens and integer ids.

    Special tokens come first, in the given order (so by default ``<pad>`` is 0 and ``<unk>``
    is 1), then the other tokens by decreasing frequency (ties in alphabetical order, so the ids
    do not depend on the order of the corpus). Unknown tokens encode to ``<unk>``.
    """

    def __init__(
        self,
        tokens: Sequence[str],
        unk_token: str | None = "<unk>",
        pad_token: str | None = "<pad>",
    ) -> None:
        self.itos = list(tokens)
        self.stoi = {token: index for index, token in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            duplicates = [t for t, n in Counter(self.itos).items() if n > 1]
            raise BuildingAIError(f"Vocabulary tokens must be unique; repeated: {duplicates[:5]}")
        for role, token in (("unk_token", unk_token), ("pad_token", pad_token)):
            if token is not None and token not in self.stoi:
                raise BuildingAIError(
                    f"Vocabulary {role} {token!r} is not among the tokens",
                    help=f"add it to the tokens, or pass {role}=None",
                )
        self.unk_token, self.pad_token = unk_token, pad_token

    @classmethod
    def build(
        cls,
        token_lists: Iterable[Iterable[str]],
        min_freq: int = 1,
        max_size: int | None = None,
        specials: Sequence[str] = ("<pad>", "<unk>"),
        unk_token: str | None = "<unk>",
        pad_token: str | None = "<pad>",
    ) -> Vocabulary:
        """Count tokens over a corpus of token lists and keep those seen ``min_freq`` times or
        more; ``max_size`` caps the total size, specials included."""
        if min_freq < 1:
            raise BuildingAIError(f"Vocabulary min_freq must be >= 1, got {min_freq}")
        if max_size is not None and max_size < len(specials):
            raise BuildingAIError(
                f"Vocabulary max_size={max_size} cannot hold the {len(specials)} special tokens"
            )
        counts = Counter(itertools.chain.from_iterable(token_lists))
        special_set = set(specials)
        kept = sorted(
            (
                token
                for token, count in counts.items()
                if count >= min_freq and token not in special_set
            ),
            key=lambda token: (-counts[token], token),
        )
        if max_size is not None:
            kept = kept[: max_size - len(specials)]
        vocabulary = cls([*specials, *kept], unk_token=unk_token, pad_token=pad_token)
        vocabulary.counts = counts
        return vocabulary

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def __getitem__(self, token: str) -> int:
        return self.token_to_id(token)

    @property
    def unk_id(self) -> int | None:
        return None if self.unk_token is None else self.stoi[self.unk_token]

    @property
    def pad_id(self) -> int | None:
        return None if self.pad_token is None else self.stoi[self.pad_token]

    def token_to_id(self, token: str) -> int:
        index = self.stoi.get(token)
        if index is None:
            if self.unk_token is None:
                raise BuildingAIError(
                    f"token {token!r} is not in the vocabulary and there is no unk_token",
                    help="build the vocabulary with an '<unk>' special token",
                )
            return self.stoi[self.unk_token]
        return index

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Token list -> id list (unknown tokens -> ``unk_id``)."""
        if self.unk_token is None:
            return [self.token_to_id(token) for token in tokens]
        unk = self.stoi[self.unk_token]
        return [self.stoi.get(token, unk) for token in tokens]

    def decode(
        self, ids: Iterable[int], skip_special: bool = False, specials: Sequence[str] | None = None
    ) -> list[str]:
        """Id list (or 1-D array/Tensor) -> token list; ``skip_special`` drops ``specials``
        (default: the pad token)."""
        if isinstance(ids, (Tensor, np.ndarray)):
            ids = ids.tolist()
        size = len(self.itos)
        bad = [i for i in ids if not 0 <= i < size]
        if bad:
            raise BuildingAIError(
                f"ids {bad[:5]} are out of range for a vocabulary of {size} tokens",
                help="decode ids produced by this vocabulary's encode()",
            )
        tokens = [self.itos[i] for i in ids]
        if skip_special:
            skipped = set(specials) if specials is not None else {self.pad_token}
            tokens = [token for token in tokens if token not in skipped]
        return tokens

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable description; ``Vocabulary.from_dict`` restores it."""
        return {"tokens": self.itos, "unk_token": self.unk_token, "pad_token": self.pad_token}

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> Vocabulary:
        return cls(state["tokens"], unk_token=state["unk_token"], pad_token=state["pad_token"])

    def __repr__(self) -> str:
        return f"Vocabulary(size={len(self)}, unk={self.unk_token!r}, pad={self.pad_token!r})"


def _check_side(name: str, value: str) -> None:
    if value not in ("left", "right"):
        raise BuildingAIError(f"pad_sequences {name} must be 'left' or 'right', got {value!r}")


def pad_sequences(
    sequences: Sequence[Sequence[int]],
    max_length: int | None = None,
    padding: str = "right",
    truncation: str = "right",
    value: int | float = 0,
    dtype=np.int64,
) -> tuple[np.ndarray, np.ndarray]:
    """Pad (and truncate) sequences of ids into one array.

    Returns ``(padded, lengths)``: ``padded: (N, L)`` with ``L = max_length`` or the longest
    sequence, and ``lengths: (N,)`` the number of real (kept) items per row. ``padding="left"``
    puts the padding before the sequence (useful for decoders generating to the right);
    ``truncation="left"`` keeps the *last* ``max_length`` items.
    """
    _check_side("padding", padding)
    _check_side("truncation", truncation)
    if max_length is not None and max_length < 0:
        raise BuildingAIError(f"pad_sequences max_length must be >= 0, got {max_length}")
    arrays = [s.array if isinstance(s, Tensor) else s for s in sequences]
    lengths = np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays))
    flat = (
        np.concatenate([np.asarray(a, dtype=dtype).reshape(-1) for a in arrays])
        if arrays
        else np.zeros(0, dtype)
    )
    width = int(lengths.max(initial=0)) if max_length is None else int(max_length)
    kept = np.minimum(lengths, width)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    if truncation == "left":
        starts = starts + lengths - kept  # skip the items cut from the front
    columns = np.arange(width)
    # first column holding a real item in each row
    first = np.zeros_like(kept) if padding == "right" else width - kept
    mask = (columns >= first[:, None]) & (columns < (first + kept)[:, None])  # (N, L)
    source = starts[:, None] + (columns - first[:, None])
    padded = np.full((len(arrays), width), value, dtype=dtype)
    padded[mask] = flat[source[mask]]
    return padded, kept


def collate_sequences(
    batch: Sequence[Any],
    pad_id: int = 0,
    max_length: int | None = None,
    padding: str = "right",
    truncation: str = "right",
) -> dict[str, Tensor] | tuple[Any, ...]:
    """A DataLoader ``collate_fn`` for variable-length id sequences.

    Items are id sequences, or tuples ``(ids, *rest)`` (e.g. ``(ids, label)``). Returns
    ``{"ids": (B, L) int64, "lengths": (B,) int64, "mask": (B, L) bool}`` where ``mask`` is True
    at real tokens and False at padding, or ``(that dict, *collated rest)`` for tuple items.
    Customise with ``functools.partial(collate_sequences, pad_id=vocab.pad_id, max_length=256)``.
    """
    if not batch:
        raise BuildingAIError("[collate_sequences] cannot collate an empty batch")
    has_rest = isinstance(batch[0], tuple)
    sequences = [item[0] for item in batch] if has_rest else list(batch)
    ids, lengths = pad_sequences(
        sequences, max_length=max_length, padding=padding, truncation=truncation, value=pad_id
    )
    width = ids.shape[1]
    columns = np.arange(width)
    if padding == "right":
        mask = columns < lengths[:, None]
    else:
        mask = columns >= (width - lengths)[:, None]
    padded = {"ids": Tensor(ids), "lengths": Tensor(lengths), "mask": Tensor(mask)}
    if not has_rest:
        return padded
    rest = [default_collate([item[k] for item in batch]) for k in range(1, len(batch[0]))]
    return (padded, *rest)


__all__ = ["Tokenizer", "Vocabulary", "collate_sequences", "pad_sequences"]
