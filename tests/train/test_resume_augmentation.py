"""Exact resume when the training set augments with NumPy's global random stream, loaded in
the main process or by worker processes."""

import numpy as np
import pytest

from buildingai.data.datasets import Spirals
from buildingai.train import Callback, Config, Trainer, register_dataset

pytest.importorskip("safetensors")


@register_dataset
class JitteredSpirals(Spirals):
    """Spirals whose points get fresh ``np.random`` noise each time they are read."""

    def __getitem__(self, index: int):
        point, label = super().__getitem__(index)
        return point + np.random.normal(0.0, 0.05, 2).astype(np.float32), label


class Crash(Callback):
    def __init__(self, at_step):
        self.at_step = at_step

    def on_step_end(self, trainer):
        if trainer.step == self.at_step:
            raise KeyboardInterrupt("simulated crash")


def config(run_dir, num_workers) -> Config:
    return Config(
        seed=3, epochs=2, batch_size=16, eval_batch_size=64, run_dir=run_dir, log_every=4,
        data=dict(train=dict(type="JitteredSpirals", n=96, seed=0),
                  eval=dict(type="Spirals", n=48, seed=1), num_workers=num_workers),
        model=dict(type="MLP", in_features=2, hidden=[8], out_features=3),
        optim=dict(type="Adam", lr=0.01), progress=False, checkpoint=dict(every_steps=4),
    )  # fmt: skip


@pytest.mark.parametrize("num_workers", [0, 2])
def test_resume_mid_epoch_with_random_augmentation_is_bit_identical(tmp_path, num_workers):
    reference = Trainer.from_config(config(tmp_path / "ref", num_workers), verbose=False)
    reference.fit()

    # Steps 6 per epoch: the last checkpoint before the crash at step 10 is step 8, mid-epoch 1.
    crashed = Trainer.from_config(
        config(tmp_path / "run", num_workers), verbose=False, callbacks=[Crash(10)]
    )
    with pytest.raises(KeyboardInterrupt):
        crashed.fit()
    resumed = Trainer.from_config(config(tmp_path / "run", num_workers), resume=True, verbose=False)
    assert (resumed.step, resumed.epoch, resumed.batch_in_epoch) == (8, 1, 2)
    resumed.fit()

    expected, got = reference.model.state_dict(), resumed.model.state_dict()
    assert list(expected) == list(got)
    for name in expected:
        assert np.array_equal(expected[name].numpy(), got[name].numpy()), name


def test_worker_augmentation_does_not_depend_on_the_number_of_workers(tmp_path):
    # Each batch is seeded from (seed, epoch, batch), whichever worker loads it.
    final = []
    for num_workers in (1, 3):
        trainer = Trainer.from_config(config(None, num_workers), verbose=False)
        trainer.fit()
        final.append([value.numpy() for value in trainer.model.state_dict().values()])
    assert all(np.array_equal(a, b) for a, b in zip(*final))
