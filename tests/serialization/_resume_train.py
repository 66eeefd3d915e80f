"""A small training run that draws from every random stream, for the exact-resume test.

    python _resume_train.py full STEPS OUT               train STEPS steps, save the weights to OUT
    python _resume_train.py start STEPS CHECKPOINT       train STEPS steps, save a checkpoint, exit
    python _resume_train.py resume STEPS CHECKPOINT OUT  load it, train STEPS more, save weights
    python _resume_train.py weights_only STEPS CHECKPOINT OUT   the same, restoring only weights

A 2-layer MLP written with raw tensors: dropout from the default generator, input noise from
NumPy's legacy global generator, a learning-rate jitter from Python's `random`, and a data order
shuffled every epoch by its own Generator. Plain SGD.
"""

import random
import sys

import numpy as np

import buildingai as bai
from buildingai.serialization import get_rng_state, load, save, set_rng_state

N_SAMPLES, N_IN, N_HIDDEN, N_OUT, BATCH = 40, 5, 16, 3, 8
LEARNING_RATE, DROP = 0.05, 0.3


def dataset():
    data_generator = bai.Generator(seed=1234)  # fixed data, independent of the streams under test
    return bai.randn(N_SAMPLES, N_IN, generator=data_generator), bai.randn(
        N_SAMPLES, N_OUT, generator=data_generator
    )


def fresh_state() -> dict:
    bai.manual_seed(0)  # also seeds NumPy's legacy generator
    random.seed(0)
    return {
        "model": {
            "w1": bai.randn(N_IN, N_HIDDEN, requires_grad=True),
            "b1": bai.zeros(N_HIDDEN, requires_grad=True),
            "w2": bai.randn(N_HIDDEN, N_OUT, requires_grad=True),
            "b2": bai.zeros(N_OUT, requires_grad=True),
        },
        "shuffle": bai.Generator(seed=7),
        "loader": {"epoch": 0, "batch": 0, "order": None},
        "step": 0,
    }


def train(state: dict, steps: int) -> None:
    x_all, y_all = dataset()
    params, loader = state["model"], state["loader"]
    batches_per_epoch = N_SAMPLES // BATCH
    for _ in range(steps):
        if loader["order"] is None or loader["batch"] == batches_per_epoch:  # a new epoch
            if loader["order"] is not None:
                loader["epoch"] += 1
            loader["order"] = state["shuffle"].backend_generator().permutation(N_SAMPLES)
            loader["batch"] = 0
        index = loader["order"][loader["batch"] * BATCH : (loader["batch"] + 1) * BATCH]
        loader["batch"] += 1
        noise = 0.01 * np.random.standard_normal((BATCH, N_IN)).astype(np.float32)
        x = x_all[index] + bai.tensor(noise)  # (B, N_IN)
        y = y_all[index]  # (B, N_OUT)

        hidden = x @ params["w1"] + params["b1"]  # (B, N_HIDDEN)
        hidden = hidden.where(hidden > 0, 0.0)
        hidden = hidden * (bai.rand(hidden.shape) > DROP) / (1 - DROP)  # dropout
        error = hidden @ params["w2"] + params["b2"] - y  # (B, N_OUT)
        loss = (error * error).sum() / BATCH
        loss.backward()

        learning_rate = LEARNING_RATE * (1 + 0.1 * random.random())
        with bai.no_grad():
            for p in params.values():
                p.data -= learning_rate * p.grad.data
                p.grad = None
        state["step"] += 1


def checkpoint(state: dict) -> dict:
    return {
        "model": state["model"],
        "rng": get_rng_state(),
        "shuffle": state["shuffle"].get_state(),
        "loader": state["loader"],
        "step": state["step"],
    }


def restore(state: dict, saved: dict, everything: bool = True) -> None:
    for name, tensor in saved["model"].items():
        state["model"][name] = tensor
    if everything:
        set_rng_state(saved["rng"])
        state["shuffle"].set_state(saved["shuffle"])
        state["loader"] = saved["loader"]
        state["step"] = saved["step"]


if __name__ == "__main__":
    mode, steps = sys.argv[1], int(sys.argv[2])
    state = fresh_state()
    if mode in ("resume", "weights_only"):
        # Scramble every stream first: only what the checkpoint restores may matter.
        bai.manual_seed(999)
        random.seed(999)
        np.random.seed(999)
        state["shuffle"] = bai.Generator(seed=999)
        restore(state, load(sys.argv[3], map_location="cpu"), everything=mode == "resume")
    train(state, steps)
    if mode == "start":
        save(checkpoint(state), sys.argv[3])
    else:
        save({"model": state["model"], "step": state["step"]}, sys.argv[-1])
