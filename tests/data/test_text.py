"""Tokenizer, Vocabulary, pad_sequences and collate_sequences."""

from __future__ import annotations

import json

import numpy as np
import pytest

import buildingai as bai
from buildingai.data.text import Tokenizer, Vocabulary, collate_sequences, pad_sequences
from buildingai.errors import BuildingAIError


def test_tokenizer():
    assert Tokenizer()("Don't PANIC, Bob!") == ["don't", "panic", ",", "bob", "!"]
    assert Tokenizer(lower=False)("Hi there.") == ["Hi", "there", "."]
    assert Tokenizer(pattern=r"\S+")("a-b c") == ["a-b", "c"]
    assert Tokenizer().batch(["a b", "c"]) == [["a", "b"], ["c"]]
    with pytest.raises(BuildingAIError, match="Tokenizer expects a str, got bytes"):
        Tokenizer()(b"bytes")


def test_vocabulary_build_encode_decode():
    corpus = [["the", "cat", "sat"], ["the", "dog", "sat"], ["the", "end"]]
    vocab = Vocabulary.build(corpus, min_freq=1)
    assert vocab.itos[:4] == ["<pad>", "<unk>", "the", "sat"]  # specials, then by frequency
    assert vocab.itos[4:] == ["cat", "dog", "end"]  # ties alphabetical
    assert vocab.pad_id == 0 and vocab.unk_id == 1 and len(vocab) == 7
    assert vocab.encode(["the", "bird"]) == [2, 1]
    assert vocab["cat"] == 4 and "cat" in vocab and "bird" not in vocab
    assert vocab.decode([2, 4, 0, 0]) == ["the", "cat", "<pad>", "<pad>"]
    assert vocab.decode(np.array([2, 4, 0]), skip_special=True) == ["the", "cat"]
    assert vocab.decode(bai.tensor([3])) == ["sat"]
    small = Vocabulary.build(corpus, min_freq=2, specials=("<pad>", "<unk>", "<bos>"))
    assert small.itos == ["<pad>", "<unk>", "<bos>", "the", "sat"]
    capped = Vocabulary.build(corpus, max_size=3)
    assert capped.itos == ["<pad>", "<unk>", "the"]
    restored = Vocabulary.from_dict(json.loads(json.dumps(vocab.to_dict())))
    assert restored.itos == vocab.itos and restored.unk_id == 1


def test_vocabulary_errors():
    with pytest.raises(BuildingAIError, match="min_freq must be >= 1"):
        Vocabulary.build([], min_freq=0)
    with pytest.raises(BuildingAIError, match="max_size=1 cannot hold the 2 special tokens"):
        Vocabulary.build([], max_size=1)
    with pytest.raises(BuildingAIError, match="tokens must be unique"):
        Vocabulary(["a", "a"], unk_token=None, pad_token=None)
    with pytest.raises(BuildingAIError, match="unk_token '<unk>' is not among the tokens"):
        Vocabulary(["a"], pad_token=None)
    strict = Vocabulary(["a"], unk_token=None, pad_token=None)
    with pytest.raises(BuildingAIError, match="'b' is not in the vocabulary"):
        strict.encode(["b"])
    with pytest.raises(BuildingAIError, match=r"ids \[5\] are out of range"):
        strict.decode([5])


SEQUENCES = [[1, 2, 3], [4], [], [5, 6, 7, 8, 9]]


@pytest.mark.parametrize(
    "padding, truncation, expected",
    [
        ("right", "right", [[1, 2, 3, 0], [4, 0, 0, 0], [0, 0, 0, 0], [5, 6, 7, 8]]),
        ("left", "right", [[0, 1, 2, 3], [0, 0, 0, 4], [0, 0, 0, 0], [5, 6, 7, 8]]),
        ("right", "left", [[1, 2, 3, 0], [4, 0, 0, 0], [0, 0, 0, 0], [6, 7, 8, 9]]),
        ("left", "left", [[0, 1, 2, 3], [0, 0, 0, 4], [0, 0, 0, 0], [6, 7, 8, 9]]),
    ],
)
def test_pad_sequences(padding, truncation, expected):
    padded, lengths = pad_sequences(SEQUENCES, max_length=4, padding=padding,
                                    truncation=truncation)  # fmt: skip
    np.testing.assert_array_equal(padded, expected)
    np.testing.assert_array_equal(lengths, [3, 1, 0, 4])
    assert padded.dtype == np.int64


def test_pad_sequences_defaults_and_errors():
    padded, lengths = pad_sequences(SEQUENCES, value=-1)
    assert padded.shape == (4, 5) and padded[1, 1] == -1
    assert pad_sequences([])[0].shape == (0, 0)
    floats, _ = pad_sequences([np.array([0.5]), [1.5, 2.5]], dtype=np.float32)
    np.testing.assert_array_equal(floats, [[0.5, 0], [1.5, 2.5]])
    with pytest.raises(BuildingAIError, match="padding must be 'left' or 'right', got 'up'"):
        pad_sequences(SEQUENCES, padding="up")
    with pytest.raises(BuildingAIError, match="max_length must be >= 0"):
        pad_sequences(SEQUENCES, max_length=-1)


def test_collate_sequences():
    batch = collate_sequences([[3, 4, 5], [6]], pad_id=0)
    np.testing.assert_array_equal(batch["ids"].numpy(), [[3, 4, 5], [6, 0, 0]])
    np.testing.assert_array_equal(batch["lengths"].numpy(), [3, 1])
    np.testing.assert_array_equal(batch["mask"].numpy(), [[1, 1, 1], [1, 0, 0]])
    left, labels = collate_sequences([([3, 4, 5], 1), ([6], 0)], padding="left", pad_id=9)
    np.testing.assert_array_equal(left["ids"].numpy(), [[3, 4, 5], [9, 9, 6]])
    np.testing.assert_array_equal(left["mask"].numpy(), [[1, 1, 1], [0, 0, 1]])
    assert labels.tolist() == [1, 0]
    with pytest.raises(BuildingAIError, match="cannot collate an empty batch"):
        collate_sequences([])
