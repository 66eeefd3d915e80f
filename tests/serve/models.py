"""Models for the serving tests: configs, a checkpoint as the Trainer writes it, a direct run."""

import numpy as np

from buildingai.autograd.mode import no_grad
from buildingai.autograd.tensor import Tensor
from buildingai.train import Trainer

MLP_CONFIG = dict(
    seed=3,
    model=dict(type="MLP", hidden=[32], normalize=[0.1307, 0.3081]),
    data=dict(train=dict(type="MNIST", split="train")),  # built lazily: no data is read
    progress=False,
    retain_freed_memory=False,
)
CNN_CONFIG = dict(MLP_CONFIG, model=dict(type="SmallCNN", channels=[4, 8], hidden=16))
DIGITS = [str(digit) for digit in range(10)]


def write_checkpoint(path, config):
    """A checkpoint as `buildingai train` writes it (random weights: serving does not care)."""
    trainer = Trainer.from_config(config)
    trainer.save_checkpoint(path)
    return trainer.model.eval()


def run_directly(model, batch: np.ndarray) -> np.ndarray:
    with no_grad():
        return model(Tensor(batch)).numpy()
