"""A small Transformer encoder classifying Rotten Tomatoes review snippets as fresh or rotten,
next to a TF-IDF logistic-regression baseline computed with NumPy on the same split.

    python examples/rotten_tomatoes_transformer.py            # Trainer + baseline
    python examples/rotten_tomatoes_transformer.py --plain    # the same training as a plain loop
    python examples/rotten_tomatoes_transformer.py epochs=4 model.layers=1

Model: token embedding + sinusoidal positions -> 2 encoder layers (4 heads,
d=64, feed-forward 128, dropout) -> mean over real tokens -> Linear(64, 2).

Result observed here (Trainer, the config as given; 2 CPU cores shared with other jobs,
OPENBLAS_NUM_THREADS=1), on the library's fixed by-movie split (10,348 train, 2,460 test):

- TF-IDF logistic regression (words and word pairs, NumPy, below): 77.56% test accuracy, 8 s.
- This Transformer: test accuracy 0.679, 0.709, 0.732, 0.755, 0.754, 0.746, 0.748, 0.751 after
  epochs 1-8; 75.08% at the end, in 721 s. It stays about 2.5 points below the baseline: on ten
  thousand short snippets, word-pair counts are hard to beat for a model trained from scratch.
  An earlier setting (5 epochs, lr 2e-3) ended at 73.2%.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from pathlib import Path

import numpy as np
from run_dirs import choose_run_dir, run_script  # this folder is on sys.path when run

import buildingai as bai
from buildingai import nn, optim
from buildingai.data import DataLoader, Dataset
from buildingai.data.datasets import RottenTomatoes
from buildingai.data.text import Tokenizer, Vocabulary, collate_sequences
from buildingai.nn import functional as F
from buildingai.nn.embedding import Embedding
from buildingai.nn.positional import SinusoidalPositionalEncoding
from buildingai.nn.transformer import TransformerEncoder, TransformerEncoderLayer
from buildingai.train import Config, Trainer

CONFIG = Path(__file__).parent / "configs" / "rotten_tomatoes_transformer.yaml"


# ----- data --------------------------------------------------------------------------------------
class EncodedTexts(Dataset):
    """(token ids, label) pairs: texts tokenised and mapped to ids once, up front."""

    def __init__(self, texts: list[str], labels: np.ndarray, tokenizer, vocabulary) -> None:
        self.ids = [vocabulary.encode(tokenizer(text)) for text in texts]
        self.labels = labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        return self.ids[index], self.labels[index]


def load_data(config: Config):
    train_raw, test_raw = RottenTomatoes("train"), RottenTomatoes("test")
    tokenizer = Tokenizer()
    vocabulary = Vocabulary.build(
        tokenizer.batch(train_raw.texts), min_freq=config.data.min_freq, max_size=config.data.vocab
    )
    train_set = EncodedTexts(train_raw.texts, train_raw.labels, tokenizer, vocabulary)
    test_set = EncodedTexts(test_raw.texts, test_raw.labels, tokenizer, vocabulary)
    collate = functools.partial(
        collate_sequences, pad_id=vocabulary.pad_id, max_length=config.data.max_length
    )
    return train_raw, test_raw, train_set, test_set, vocabulary, collate


# ----- the model ---------------------------------------------------------------------------------
class TextTransformer(nn.Module):
    """ids (B, L) int64, mask (B, L) bool (True at real tokens) -> logits (B, classes)."""

    def __init__(self, vocab_size: int, dim: int = 64, heads: int = 4, layers: int = 2,
                 feedforward: int = 128, dropout: float = 0.1, classes: int = 2,
                 max_length: int = 512) -> None:  # fmt: skip
        super().__init__()
        self.dim = dim
        self.embedding = Embedding(vocab_size, dim, padding_idx=0)
        self.positions = SinusoidalPositionalEncoding(
            dim, max_len=max_length, dropout=dropout, batch_first=True
        )
        layer = TransformerEncoderLayer(
            dim, heads, dim_feedforward=feedforward, dropout=dropout, batch_first=True
        )
        self.encoder = TransformerEncoder(layer, layers)
        self.head = nn.Linear(dim, classes)

    def forward(self, ids: bai.Tensor, mask: bai.Tensor) -> bai.Tensor:
        # Embeddings start N(0, 1), already the scale of the positional code: no sqrt(d).
        x = self.embedding(ids)  # (B, L, D)
        x = self.positions(x)
        x = self.encoder(x, src_key_padding_mask=mask.logical_not())  # True marks padding
        weights = mask.astype(x.dtype).unsqueeze(-1)  # (B, L, 1)
        pooled = (x * weights).sum(axis=1) / weights.sum(axis=1)  # mean over real tokens (B, D)
        return self.head(pooled)  # (B, classes)


class TextTrainer(Trainer):
    """The Trainer, told how this batch is laid out: ``({"ids", "lengths", "mask"}, labels)``."""

    def compute_loss(self, batch):
        tokens, labels = batch
        logits = self.model(tokens["ids"], tokens["mask"])
        return self.loss_fn(logits, labels), logits, labels


def build_model(config: Config, vocabulary) -> TextTransformer:
    settings = config.model.to_dict()
    return TextTransformer(len(vocabulary), max_length=config.data.max_length, **settings)


# ----- the baseline ------------------------------------------------------------------------------
def tfidf_logistic_regression(train_raw, test_raw, steps: int = 300, l2: float = 1e-4) -> float:
    """Test accuracy of L2-regularised logistic regression on TF-IDF features of words and word
    pairs (seen at least twice in training), fitted by full-batch Adam, in NumPy.

    The documents-by-features matrix is kept sparse as (row, column, value) triples, so
    ``X @ w`` is one ``bincount`` over rows and ``X.T @ g`` one over columns.
    """
    tokenizer = Tokenizer()

    def features(text: str) -> list[str]:
        words = tokenizer(text)
        return words + [a + " " + b for a, b in zip(words, words[1:])]

    train_docs = [features(t) for t in train_raw.texts]
    vocabulary = Vocabulary.build(train_docs, min_freq=2, specials=("<unk>",), pad_token=None)

    def triples(docs):
        rows, cols = [], []
        for row, doc in enumerate(docs):
            ids = sorted(set(vocabulary.encode(doc)) - {vocabulary.unk_id})
            rows += [row] * len(ids)
            cols += ids
        return np.asarray(rows, np.int64), np.asarray(cols, np.int64)

    train_rows, train_cols = triples(train_docs)
    test_rows, test_cols = triples([features(t) for t in test_raw.texts])
    size, n_train = len(vocabulary), len(train_docs)
    document_frequency = np.bincount(train_cols, minlength=size)
    idf = np.log((1 + n_train) / (1 + document_frequency)) + 1

    def matrix(rows, cols, n_docs):  # binary term presence x idf, rows scaled to unit length
        values = idf[cols]
        norms = np.sqrt(np.bincount(rows, values**2, minlength=n_docs))
        return rows, cols, values / np.maximum(norms[rows], 1e-12), n_docs

    def scores(X, weights, bias):
        rows, cols, values, n_docs = X
        return np.bincount(rows, values * weights[cols], minlength=n_docs) + bias

    X_train, X_test = (
        matrix(train_rows, train_cols, n_train),
        matrix(test_rows, test_cols, len(test_raw)),
    )
    y = train_raw.labels.astype(np.float64)
    weights, bias = np.zeros(size), 0.0
    m, v, mb, vb = np.zeros(size), np.zeros(size), 0.0, 0.0
    for step in range(1, steps + 1):
        probability = 1 / (1 + np.exp(-scores(X_train, weights, bias)))
        error = (probability - y) / n_train  # d(mean log-loss)/d(score)
        rows, cols, values, _ = X_train
        grad = np.bincount(cols, values * error[rows], minlength=size) + l2 * weights
        grad_bias = error.sum()
        m, v = 0.9 * m + 0.1 * grad, 0.999 * v + 0.001 * grad**2
        mb, vb = 0.9 * mb + 0.1 * grad_bias, 0.999 * vb + 0.001 * grad_bias**2
        correction = math.sqrt(1 - 0.999**step) / (1 - 0.9**step)
        weights -= 0.05 * correction * m / (np.sqrt(v) + 1e-8)
        bias -= 0.05 * correction * mb / (math.sqrt(vb) + 1e-8)
    predicted = scores(X_test, weights, bias) > 0
    return float(np.mean(predicted == (test_raw.labels == 1)))


# ----- the plain loop ----------------------------------------------------------------------------
def train_plain(config: Config) -> float:
    """The same training as the Trainer run, written out as a loop."""
    bai.manual_seed(config.seed)
    _, _, train_set, test_set, vocabulary, collate = load_data(config)
    train_loader = DataLoader(train_set, batch_size=config.batch_size, shuffle=True,
                              collate_fn=collate, generator=bai.Generator(config.seed))  # fmt: skip
    test_loader = DataLoader(test_set, batch_size=config.eval_batch_size, collate_fn=collate)
    model = build_model(config, vocabulary)
    optimizer = optim.AdamW(model.parameters(), lr=config.optim.lr,
                            weight_decay=config.optim.weight_decay)  # fmt: skip
    scheduler = optim.CosineAnnealingLR(optimizer, T_max=config.epochs,
                                        steps_per_epoch=len(train_loader))  # fmt: skip
    accuracy = 0.0
    for epoch in range(config.epochs):
        model.train()
        for tokens, labels in train_loader:  # tokens["ids"]: (B, L), labels: (B,)
            logits = model(tokens["ids"], tokens["mask"])  # (B, 2)
            loss = F.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optim.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            scheduler.step_batch()
        model.eval()
        correct = 0
        with bai.no_grad():
            for tokens, labels in test_loader:
                predicted = model(tokens["ids"], tokens["mask"]).argmax(axis=1)
                correct += (predicted == labels).sum().item()
        accuracy = correct / len(test_set)
        print(f"epoch {epoch + 1}/{config.epochs}  test accuracy {accuracy:.4f}")
    return accuracy


def train_with_trainer(config: Config) -> float:
    bai.manual_seed(config.seed)
    _, _, train_set, test_set, vocabulary, collate = load_data(config)
    model = build_model(config, vocabulary)
    optimizer = optim.AdamW(model.parameters(), lr=config.optim.lr,
                            weight_decay=config.optim.weight_decay)  # fmt: skip
    trainer = TextTrainer(
        model, optimizer, train_set, eval_set=test_set, collate_fn=collate,
        epochs=config.epochs, batch_size=config.batch_size,
        eval_batch_size=config.eval_batch_size, grad_clip=config.grad_clip, seed=config.seed,
        run_dir=config.run_dir, show_progress=config.progress, config=config,
    )  # fmt: skip
    trainer.scheduler = optim.CosineAnnealingLR(optimizer, T_max=config.epochs,
                                                steps_per_epoch=trainer.steps_per_epoch)  # fmt: skip
    return trainer.fit()["eval/accuracy"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="config overrides: key=value")
    parser.add_argument("--config", default=str(CONFIG))
    parser.add_argument("--plain", action="store_true", help="run the plain loop instead")
    parser.add_argument("--no-baseline", action="store_true", help="skip the TF-IDF baseline")
    args = parser.parse_args()
    config = Config.from_yaml(args.config).merge_overrides(args.overrides)
    if not args.plain:
        choose_run_dir(config, args.overrides)  # runs/rotten_tomatoes_transformer, then -2...

    if not args.no_baseline:
        started = time.perf_counter()
        baseline = tfidf_logistic_regression(RottenTomatoes("train"), RottenTomatoes("test"))
        print(f"TF-IDF logistic regression: test accuracy {baseline:.4f} "
              f"({time.perf_counter() - started:.0f} s)")  # fmt: skip
    started = time.perf_counter()
    accuracy = train_plain(config) if args.plain else train_with_trainer(config)
    print(f"Transformer: test accuracy {accuracy:.4f} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    sys.exit(run_script(main))
