"""The small CNN of ``mnist_cnn.py`` (with dropout before the last layer) on Fashion-MNIST:
28 x 28 grayscale photos of clothes in 10 classes, a harder set than the digits.

    python examples/fashion_mnist_cnn.py            # with the Trainer, config in configs/
    python examples/fashion_mnist_cnn.py --plain    # the same training as a plain loop

The model and both loops are those of ``mnist_cnn.py``; only the data and the config change.

Result observed here (Trainer, the config as given with eval_batch_size=500; 2 CPU cores
shared with two other trainings, OPENBLAS_NUM_THREADS=1): test accuracy 0.8844, 0.9060, 0.9131,
0.9154 after epochs 1-4; 91.54% in 2303 s in all.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mnist_cnn import main  # the sibling example (this folder is on sys.path when run)
from run_dirs import run_script

from buildingai.data.datasets import FashionMNIST

CONFIG = Path(__file__).parent / "configs" / "fashion_mnist_cnn.yaml"

if __name__ == "__main__":
    sys.exit(run_script(lambda: main(CONFIG, FashionMNIST)))
