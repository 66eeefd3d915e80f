"""``Trainer``: a readable training loop with evaluation, metrics, callbacks, a progress bar
and exact resume after a crash.

The loop in ``fit`` is the whole story: take a batch, compute the loss, step the optimizer,
tell the callbacks. Everything else (logging, checkpoints, early stopping) is a callback. A
checkpoint holds everything the next step depends on (weights, optimizer and scheduler state,
every random stream, the step, the epoch and the position in the epoch's data order), so a run
resumed after a crash ends with the same weights, bit for bit, as one that never stopped.
"""

from __future__ import annotations

import copy
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import nn, optim
from ..autograd.mode import no_grad
from ..autograd.tensor import Tensor
from ..backend.memory import retain_freed_memory
from ..backend.random import Generator, get_rng_state, manual_seed, set_rng_state
from ..data import DataLoader, Sampler
from ..errors import CheckpointError
from ..nn.loss import CrossEntropyLoss
from ..serialization import load, save
from . import callbacks as cb
from .config import Config
from .metrics import Mean, Metric, metric_from_name
from .progress import progress
from .registry import LOSSES, MODELS, OPTIMIZERS, SCHEDULERS, build_dataset

# What ``Trainer.from_config`` accepts: a config is checked against these defaults, so a
# misspelt key fails at once with the closest valid name.
DEFAULTS = Config(
    seed=0,
    epochs=1,
    max_steps=None,  # stop early after this many steps in all
    batch_size=128,
    eval_batch_size=1000,
    device="cpu",
    run_dir=None,  # where config.yaml, metrics and checkpoints go; None keeps nothing
    data=dict(
        train=dict(type="MNIST", split="train"),
        eval=dict(type="MNIST", split="test"),
        num_workers=0,
        prefetch=None,  # None: 2 per worker, and no background thread with num_workers=0
        shuffle=True,
        drop_last=False,
    ),
    model=dict(type="MLP"),
    optim=dict(type="Adam", lr=1e-3),
    scheduler=None,  # e.g. {type: CosineAnnealingLR, T_max: 5}; positions count epochs
    loss=dict(type="CrossEntropyLoss"),
    metrics=["accuracy"],
    grad_clip=None,  # max global gradient norm
    log_every=50,
    checkpoint=dict(every_steps=None, keep_last=2, keep_best=None, mode="max"),
    early_stopping=None,  # e.g. {metric: eval/loss, mode: min, patience: 3}
    progress=True,
    # keep freed host memory for the next step instead of returning it to the OS
    # (buildingai.backend.retain_freed_memory: a process-wide malloc setting)
    retain_freed_memory=True,
)


def load_config(source: str | os.PathLike | Config | dict, overrides: Iterable[str] = ()) -> Config:
    """``DEFAULTS`` updated from a YAML file (or a dict), then from ``key=value`` overrides;
    every key is checked against the defaults, so a typo fails here with a suggestion."""
    config = source if isinstance(source, (Config, dict)) else Config.from_yaml(source)
    return DEFAULTS.copy().merge(config).merge_overrides(overrides)


class EpochSampler(Sampler):
    """The order of one epoch's items, from ``(seed, epoch)`` alone, starting at ``start``.

    Deriving each epoch's permutation from its number (instead of from a stream that advances)
    is what makes resuming exact: ``set_epoch(3, start=640)`` gives epoch 3's order from item
    640 on, as the interrupted run would have seen it.
    """

    def __init__(self, size: int, shuffle: bool = True, seed: int = 0) -> None:
        self.size, self.shuffle, self.seed = size, shuffle, seed
        self.epoch, self.start = 0, 0

    def set_epoch(self, epoch: int, start: int = 0) -> None:
        self.epoch, self.start = epoch, start

    def order(self) -> np.ndarray:
        if not self.shuffle:
            return np.arange(self.size)
        return np.random.default_rng([self.seed, self.epoch]).permutation(self.size)

    def __iter__(self) -> Iterator[int]:
        return iter(self.order()[self.start :].tolist())

    def __len__(self) -> int:
        return self.size - self.start


def _to_device(batch: Any, device: str) -> Any:
    if device == "cpu":
        return batch
    if isinstance(batch, Tensor):
        return batch.to(device)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device(item, device) for item in batch)
    if isinstance(batch, dict):
        return {key: _to_device(value, device) for key, value in batch.items()}
    return batch


class Trainer:
    """Train ``model`` on ``train_set`` with ``optimizer``; evaluate on ``eval_set``.

    Args:
        model, optimizer: a Module and an optimizer over its parameters.
        train_set, eval_set: map-style datasets yielding ``(inputs, targets)`` (any batch
            structure works when ``compute_loss`` is overridden).
        loss: called as ``loss(outputs, targets)``; default ``nn.CrossEntropyLoss()``.
        scheduler: an LR scheduler stepped every batch with ``step_batch()`` (build it with
            ``steps_per_epoch=len(trainer.train_loader)`` for positions in epochs), or
            ``ReduceLROnPlateau``, stepped after each evaluation with ``plateau_metric``.
        metrics: names (``"accuracy"``, ``"top5_accuracy"``) or ``Metric`` objects.
        callbacks: extra ``Callback`` objects. With a ``run_dir``, a ``MetricsLogger`` and a
            ``Checkpoint`` (every ``checkpoint_every`` steps and each epoch end) are added, and
            ``KeepBest`` when ``keep_best`` names a metric.
        seed: seeds the data order and, through ``manual_seed``, every random stream.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: optim.OptimizerBase,
        train_set,
        *,
        eval_set=None,
        loss: Callable | None = None,
        scheduler=None,
        epochs: int = 1,
        max_steps: int | None = None,
        batch_size: int = 64,
        eval_batch_size: int | None = None,
        shuffle: bool = True,
        drop_last: bool = False,
        collate_fn: Callable | None = None,
        num_workers: int = 0,
        prefetch: int | None = None,
        metrics: Sequence[str | Metric] = ("accuracy",),
        callbacks: Iterable[cb.Callback] = (),
        run_dir: str | os.PathLike | None = None,
        checkpoint_every: int | None = None,
        keep_last: int | None = 2,
        keep_best: str | None = None,
        keep_best_mode: str = "max",
        plateau_metric: str = "eval/loss",
        grad_clip: float | None = None,
        log_every: int = 50,
        seed: int = 0,
        device: str = "cpu",
        show_progress: bool = True,
        verbose: bool = True,
        config: Config | None = None,
    ) -> None:
        self.model, self.optimizer, self.scheduler = model, optimizer, scheduler
        self.loss_fn = loss if loss is not None else CrossEntropyLoss()
        self.epochs, self.max_steps, self.batch_size = epochs, max_steps, batch_size
        self.grad_clip, self.log_every, self.seed, self.device = grad_clip, log_every, seed, device
        self.plateau_metric = plateau_metric
        self.show_progress, self.config = show_progress, config
        self.run_dir = Path(run_dir) if run_dir is not None else None

        self.eval_batch_size = eval_batch_size or batch_size
        # What every loader of this trainer shares (also those ``evaluate(dataset)`` builds).
        self.loader_options = {
            "collate_fn": collate_fn, "num_workers": num_workers, "prefetch": prefetch,
        }  # fmt: skip
        self.train_sampler = EpochSampler(len(train_set), shuffle=shuffle, seed=seed)
        self.train_loader = DataLoader(
            train_set, batch_size=batch_size, sampler=self.train_sampler, drop_last=drop_last,
            generator=Generator(seed),  # worker seeds; kept off the default stream
            **self.loader_options,
        )  # fmt: skip
        self.steps_per_epoch = len(self.train_loader)
        self.eval_loader = None
        if eval_set is not None:
            self.eval_loader = self._eval_loader(eval_set, self.eval_batch_size)
        self.metrics = {}
        for metric in metrics:
            name = metric if isinstance(metric, str) else type(metric).__name__.lower()
            self.metrics[name] = metric_from_name(metric) if isinstance(metric, str) else metric

        self.callbacks: list[cb.Callback] = []
        if verbose:
            self.callbacks.append(cb.ConsoleLogger())
        if self.run_dir is not None:
            self.callbacks.append(cb.MetricsLogger(self.run_dir))
            self.callbacks.append(cb.Checkpoint(self.run_dir, checkpoint_every, keep_last))
            if keep_best is not None:
                self.callbacks.append(cb.KeepBest(self.run_dir, keep_best, keep_best_mode))
        self.callbacks.extend(callbacks)

        # Where the run stands; all of it goes into checkpoints.
        self.step, self.epoch, self.batch_in_epoch = 0, 0, 0
        self.stop_reason: str | None = None
        self.last_eval: dict[str, float] = {}
        self._bar = None  # the progress bar while fit runs

    # ----- the loop -----------------------------------------------------------------------------
    def fit(self) -> dict[str, float]:
        """Train until ``epochs`` (or ``max_steps``) are done or a callback stops the run;
        returns the last evaluation's metrics."""
        self._call("on_fit_start")
        total = self.epochs * self.steps_per_epoch
        if self.max_steps is not None:
            total = min(total, self.max_steps)
        bar = self._bar = progress(total, "train", enabled=self.show_progress, initial=self.step)
        window = _fresh_metrics(self.metrics)  # running values since the last log line
        started, started_step = time.perf_counter(), self.step
        while not self.finished():
            self.model.train()
            self.train_sampler.set_epoch(self.epoch, start=self.batch_in_epoch * self.batch_size)
            # Worker seeds follow (epoch, batch), so a resumed epoch's batches match too.
            self.train_loader.set_epoch(self.epoch, start_batch=self.batch_in_epoch)
            for batch in self.train_loader:
                loss, outputs, targets = self.train_step(_to_device(batch, self.device))
                self.step += 1
                self.batch_in_epoch += 1
                _update(window, loss, outputs, targets)
                bar.update()
                if self.step % self.log_every == 0:
                    rate = (self.step - started_step) / (time.perf_counter() - started)
                    logs = self._flush(window, "train") | {"lr": self.lr, "steps_per_s": rate}
                    bar.set_postfix({"loss": logs["train/loss"]})
                    self.log(logs)
                self._call("on_step_end")
                if self.finished():
                    break
            if self.batch_in_epoch >= self.steps_per_epoch:  # the epoch ran to its end
                self.epoch, self.batch_in_epoch = self.epoch + 1, 0
                self._end_of_epoch()
        bar.close()
        self._bar = None
        if self.batch_in_epoch > 0 and self.eval_loader is not None:  # stopped mid-epoch
            self.last_eval = self.evaluate()
            self.log(self.last_eval)
            self._call("on_evaluate", self.last_eval)
        self._call("on_fit_end")
        return self.last_eval

    def train_step(self, batch) -> tuple[Tensor, Any, Any]:
        """One optimizer step on ``batch``; returns ``(loss, outputs, targets)``."""
        loss, outputs, targets = self.compute_loss(batch)
        self.optimizer.zero_grad()
        loss.backward()
        if self.grad_clip is not None:
            optim.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        self.optimizer.step()
        if self.scheduler is not None and not isinstance(self.scheduler, optim.ReduceLROnPlateau):
            self.scheduler.step_batch()
        return loss, outputs, targets

    def compute_loss(self, batch) -> tuple[Tensor, Any, Any]:
        """``(loss, outputs, targets)`` of a batch ``(inputs, targets)``; override it for other
        batch structures or several outputs."""
        inputs, targets = batch
        outputs = self.model(inputs)
        return self.loss_fn(outputs, targets), outputs, targets

    def evaluate(self, dataset=None, batch_size: int | None = None) -> dict[str, float]:
        """Loss and metrics over ``dataset`` (default: the eval set), without gradients:
        ``{"eval/loss": ..., "eval/accuracy": ...}``. Another ``dataset`` is loaded like the
        eval set (same ``collate_fn``, ``num_workers`` and ``prefetch``), in batches of
        ``batch_size`` (default: the eval batch size)."""
        loader = self.eval_loader
        if dataset is not None:
            loader = self._eval_loader(dataset, batch_size or self.eval_batch_size)
        if loader is None:
            return {}
        totals = _fresh_metrics(self.metrics)
        was_training = self.model.training
        self.model.eval()
        with no_grad():
            for batch in loader:
                loss, outputs, targets = self.compute_loss(_to_device(batch, self.device))
                _update(totals, loss, outputs, targets)
        self.model.train(was_training)
        return self._flush(totals, "eval")

    def _eval_loader(self, dataset, batch_size: int) -> DataLoader:
        # Its own generator: evaluating never advances the default random stream, so a resumed
        # run (whose eval loader starts afresh) draws the same numbers as the original one.
        return DataLoader(
            dataset, batch_size=batch_size, generator=Generator(self.seed), **self.loader_options
        )

    def _end_of_epoch(self) -> None:
        if self.eval_loader is not None:
            self.last_eval = self.evaluate()
            self.log(self.last_eval)
            self._call("on_evaluate", self.last_eval)
            if isinstance(self.scheduler, optim.ReduceLROnPlateau):
                self.scheduler.step(self.last_eval[self.plateau_metric])
        self._call("on_epoch_end")

    # ----- small helpers ------------------------------------------------------------------------
    def finished(self) -> bool:
        return (
            self.stop_reason is not None
            or self.epoch >= self.epochs
            or (self.max_steps is not None and self.step >= self.max_steps)
        )

    def stop(self, reason: str) -> None:
        """Ask ``fit`` to stop after the current step (callbacks call this)."""
        self.stop_reason = reason
        if any(isinstance(c, cb.ConsoleLogger) for c in self.callbacks):
            self.write(reason)

    def write(self, text: str) -> None:
        """Print a line to the console without breaking the progress bar."""
        if self._bar is not None:
            self._bar.write(text)
        else:
            print(text, file=sys.stderr, flush=True)

    @property
    def lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    def log(self, metrics: dict[str, float]) -> None:
        self._call("on_log", metrics)

    def _call(self, hook: str, *args) -> None:
        for callback in self.callbacks:
            getattr(callback, hook)(self, *args)

    @staticmethod
    def _flush(accumulators: dict[str, Metric], prefix: str) -> dict[str, float]:
        values = {f"{prefix}/{name}": metric.compute() for name, metric in accumulators.items()}
        for metric in accumulators.values():
            metric.reset()
        return values

    # ----- checkpoints --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs (see the module docstring)."""
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
            "rng": get_rng_state(),
            "progress": {
                "step": self.step,
                "epoch": self.epoch,
                "batch_in_epoch": self.batch_in_epoch,
            },  # fmt: skip
            "callbacks": [callback.state_dict() for callback in self.callbacks],
            "config": self.config.to_dict() if self.config is not None else None,
            "last_eval": dict(self.last_eval),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.scheduler is not None and state.get("scheduler") is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        set_rng_state(state["rng"])
        self.step = int(state["progress"]["step"])
        self.epoch = int(state["progress"]["epoch"])
        self.batch_in_epoch = int(state["progress"]["batch_in_epoch"])
        saved = state.get("callbacks", [])
        if len(saved) == len(self.callbacks):
            for callback, callback_state in zip(self.callbacks, saved):
                callback.load_state_dict(callback_state)
        self.last_eval = dict(state.get("last_eval", {}))

    def save_checkpoint(self, path: str | os.PathLike) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        save(self.state_dict(), path)

    def resume(self, path: str | os.PathLike | None = None) -> bool:
        """Load ``path``, or the newest checkpoint in ``run_dir``; returns False when there is
        none (a fresh run)."""
        if path is None:
            if self.run_dir is None:
                raise CheckpointError("resume() without a path needs a run_dir")
            path = cb.latest_checkpoint(self.run_dir)
            if path is None:
                return False
        self.load_state_dict(load(path))
        return True

    # ----- building from a config ---------------------------------------------------------------
    @classmethod
    def from_config(cls, config: Config | dict, *, resume: bool = False, **overrides) -> Trainer:
        """Build data, model, optimizer, scheduler and loss from ``config`` (checked against
        ``DEFAULTS``) and return a Trainer; ``resume=True`` continues from the newest
        checkpoint in ``run_dir`` if there is one. ``overrides`` go to the constructor
        (``show_progress=False``, extra ``callbacks=[...]``)."""
        config = DEFAULTS.copy().merge(config)
        if config.retain_freed_memory:
            retain_freed_memory()
        manual_seed(config.seed)  # the model's initial weights come from the default stream
        train_set = build_dataset(config.data.train, "data.train")
        eval_set = build_dataset(config.data.eval, "data.eval") if config.data.eval else None
        model = MODELS.build(config.model, path="model")
        if config.device != "cpu":
            model.to(config.device)
        optimizer = OPTIMIZERS.build(config.optim, model.parameters(), path="optim")
        loss = LOSSES.build(config.loss, path="loss")
        checkpoint = config.checkpoint
        stopping = []
        if config.early_stopping is not None:
            stopping.append(cb.EarlyStopping(**config.early_stopping.to_dict()))
        trainer = cls(
            model, optimizer, train_set, eval_set=eval_set, loss=loss, epochs=config.epochs,
            max_steps=config.max_steps, batch_size=config.batch_size,
            eval_batch_size=config.eval_batch_size, shuffle=config.data.shuffle,
            drop_last=config.data.drop_last, num_workers=config.data.num_workers,
            prefetch=config.data.prefetch, metrics=list(config.metrics), run_dir=config.run_dir,
            checkpoint_every=checkpoint.every_steps, keep_last=checkpoint.keep_last,
            keep_best=checkpoint.keep_best, keep_best_mode=checkpoint.mode,
            grad_clip=config.grad_clip, log_every=config.log_every, seed=config.seed,
            device=config.device, show_progress=config.progress, config=config,
            callbacks=stopping + list(overrides.pop("callbacks", [])), **overrides,
        )  # fmt: skip
        if config.scheduler is not None:
            trainer.scheduler = SCHEDULERS.build(
                config.scheduler, optimizer, path="scheduler",
                fill={"steps_per_epoch": trainer.steps_per_epoch, "epochs": config.epochs},
            )  # fmt: skip
        if config.run_dir is not None:
            Path(config.run_dir).mkdir(parents=True, exist_ok=True)
            config.to_yaml(Path(config.run_dir) / "config.yaml")
        if resume:
            trainer.resume()
        return trainer


def _fresh_metrics(metrics: dict[str, Metric]) -> dict[str, Metric]:
    """New, empty accumulators: the loss and a copy of each metric."""
    fresh: dict[str, Metric] = {"loss": Mean()}
    for name, metric in metrics.items():
        fresh[name] = copy.deepcopy(metric)
        fresh[name].reset()
    return fresh


def _update(accumulators: dict[str, Metric], loss: Tensor, outputs, targets) -> None:
    count = len(targets) if hasattr(targets, "__len__") else 1
    for name, metric in accumulators.items():
        if name == "loss":
            metric.update(loss.item(), weight=count)
        else:
            metric.update(outputs, targets)
