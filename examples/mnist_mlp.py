"""An MLP (784-512-256-10) on MNIST, trained with Adam and a cosine learning-rate schedule.

Run it (MNIST is fetched and cached on first use):

    python examples/mnist_mlp.py                    # with the Trainer, config in configs/
    python examples/mnist_mlp.py epochs=2 optim.lr=3e-3
    python examples/mnist_mlp.py --plain            # the same training as a plain loop
    python examples/mnist_mlp.py --resume           # continue the newest run after a crash

Each run writes a run directory of its own: runs/mnist_mlp, then runs/mnist_mlp-2, -3, ...
(run_dir=DIR names one). A mistake in an override is one line with exit code 2 (--debug shows
the traceback).

Result observed here, from a fresh clone with an empty $BUILDINGAI_HOME (so MNIST was fetched
first) on 2 CPU cores: test accuracy 0.9719, 0.9795, 0.9822, 0.9846, 0.9852 after epochs 1-5;
98.52% in 27 s wall clock in all, download included.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from run_dirs import choose_run_dir, run_script  # this folder is on sys.path when run

import buildingai as bai
from buildingai import optim
from buildingai.data import DataLoader
from buildingai.data.datasets import MNIST
from buildingai.nn import functional as F
from buildingai.train import MLP, Config, Trainer, load_config

CONFIG = Path(__file__).parent / "configs" / "mnist_mlp.yaml"


def evaluate(model, loader) -> tuple[float, float]:
    """Mean loss and accuracy of ``model`` over ``loader``."""
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    with bai.no_grad():
        for images, labels in loader:  # (B, 1, 28, 28), (B,)
            logits = model(images)  # (B, 10)
            total_loss += F.cross_entropy(logits, labels, reduction="sum").item()
            correct += (logits.argmax(axis=1) == labels).sum().item()
            count += len(labels)
    model.train()
    return total_loss / count, correct / count


def train_plain(config: Config) -> float:
    """The same training as ``Trainer.from_config(config).fit()``, written out as a loop."""
    bai.manual_seed(config.seed)
    train_set, test_set = MNIST("train"), MNIST("test")
    train_loader = DataLoader(
        train_set, batch_size=config.batch_size, shuffle=True, generator=bai.Generator(config.seed)
    )
    test_loader = DataLoader(test_set, batch_size=config.eval_batch_size)

    model = MLP(**{k: v for k, v in config.model.to_dict().items() if k != "type"})
    optimizer = optim.Adam(model.parameters(), lr=config.optim.lr)
    scheduler = optim.CosineAnnealingLR(
        optimizer, T_max=config.epochs, steps_per_epoch=len(train_loader)
    )

    accuracy = 0.0
    for epoch in range(config.epochs):
        started = time.perf_counter()
        for images, labels in train_loader:  # (B, 1, 28, 28) float32 in [0, 1], (B,) int64
            logits = model(images)  # (B, 10)
            loss = F.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step_batch()  # cosine schedule, advanced a fraction of an epoch per batch
        test_loss, accuracy = evaluate(model, test_loader)
        print(
            f"epoch {epoch + 1}/{config.epochs}  test loss {test_loss:.4f}  "
            f"accuracy {accuracy:.4f}  ({time.perf_counter() - started:.0f} s)"
        )
    return accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="config overrides: key=value")
    parser.add_argument("--config", default=str(CONFIG))
    parser.add_argument("--plain", action="store_true", help="run the plain loop instead")
    parser.add_argument("--resume", action="store_true", help="continue the newest run")
    args = parser.parse_args()
    config = load_config(args.config, args.overrides)  # checked against Trainer defaults
    if not args.plain:  # the plain loop writes no run directory
        choose_run_dir(config, args.overrides, resume=args.resume)  # runs/mnist_mlp, then -2, -3...

    started = time.perf_counter()
    if args.plain:
        accuracy = train_plain(config)
    else:
        accuracy = Trainer.from_config(config, resume=args.resume).fit()["eval/accuracy"]
    print(f"test accuracy {accuracy:.4f} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    sys.exit(run_script(main))
