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
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from .. import accel, nn, optim
from ..autograd.mode import no_grad
from ..autograd.tensor import Tensor
from ..backend.memory import retain_freed_memory
from ..backend.random import Generator, get_rng_state, manual_seed, set_rng_state
from ..backend.threads import get_num_threads, set_num_threads
from ..data import DataLoader, ResumableSampler
from ..errors import BuildingAIError, CheckpointError
from ..graph import TensorSpec
from ..graph import compile as compile_step
from ..nn.loss import CrossEntropyLoss
from ..serialization import load, save
from . import callbacks as cb
from .checksums import ChecksumLog
from .config import Config, ConfigError, load_config, validate_config
from .metrics import Mean, Metric, metric_from_name
from .progress import progress
from .registry import LOSSES, MODELS, OPTIMIZERS, SCHEDULERS, build_dataset, check_dataset
from .run_record import append_session
from .trackers import trackers_from_config


class RunDirExistsError(BuildingAIError, FileExistsError):
    """A fresh run asked to write into a run directory that already holds files."""


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
            structure works when ``compute_loss`` is overridden), or functions without
            arguments that build them: those are called when the data is first needed (by
            ``fit``, ``evaluate``, ``resume`` or reading ``steps_per_epoch``), as
            ``from_config`` does, so building a Trainer never downloads or reads a dataset.
        loss: called as ``loss(outputs, targets)``; default ``nn.CrossEntropyLoss()``.
        scheduler: an LR scheduler stepped every batch with ``step_batch()`` (build it with
            ``steps_per_epoch=trainer.steps_per_epoch`` for positions in epochs), or
            ``ReduceLROnPlateau``, stepped after each evaluation with ``plateau_metric``; or a
            function ``trainer -> scheduler``, called when the scheduler is first needed.
        metrics: names (``"accuracy"``, ``"top5_accuracy"``) or ``Metric`` objects.
        callbacks: extra ``Callback`` objects. With a ``run_dir``, a ``MetricsLogger`` and a
            ``Checkpoint`` (every ``checkpoint_every`` steps and each epoch end) are added, and
            ``KeepBest`` when ``keep_best`` names a metric.
        run_dir: where ``fit`` writes ``config.yaml``, the run record ``run.json``, metrics and
            checkpoints. A fresh run (one not resumed) refuses a directory that already holds
            files (``RunDirExistsError``): nothing of an earlier run is ever overwritten. A
            fresh run that raises before its first checkpoint leaves the directory as it found
            it (missing or empty), so the corrected run can use it.
        seed: seeds the data order and, through ``manual_seed``, every random stream.
        compile: run each training step as a static graph (``buildingai.compile``) traced
            from ``compute_loss`` on the first batch of each shape; batches are
            ``(inputs, targets)`` tensors. Results equal eager steps to float round-off.
        accel: turn the faster kernels of ``buildingai.accel`` on (True) or off (False) when
            ``fit`` starts, process-wide; None leaves the setting as it is. The run record lists
            every registered kernel and whether it ran.
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
        compile: bool = False,  # noqa: A002 - the config key users write
        accel: bool | None = None,
    ) -> None:
        self.model, self.optimizer = model, optimizer
        self._scheduler, self._build_scheduler = scheduler, None
        if scheduler is not None and not hasattr(scheduler, "state_dict"):
            self._scheduler, self._build_scheduler = None, scheduler  # a function: built later
        self.loss_fn = loss if loss is not None else CrossEntropyLoss()
        self.epochs, self.max_steps, self.batch_size = epochs, max_steps, batch_size
        self.grad_clip, self.log_every, self.seed, self.device = grad_clip, log_every, seed, device
        self.plateau_metric = plateau_metric
        self.show_progress, self.config = show_progress, config
        self.compile = compile
        self.accel = accel  # True/False: buildingai.accel on/off when fit starts; None: as set
        self._compiled = None  # the compiled step, made on the first compiled train_step
        self.run_dir = Path(run_dir) if run_dir is not None else None

        self.eval_batch_size = eval_batch_size or batch_size
        # What every loader of this trainer shares (also those ``evaluate(dataset)`` builds).
        self.loader_options = {
            "collate_fn": collate_fn, "num_workers": num_workers, "prefetch": prefetch,
        }  # fmt: skip
        self.shuffle, self.drop_last = shuffle, drop_last
        # The datasets, or the functions that build them; the loaders are made on first use.
        self._train_source, self._eval_source = train_set, eval_set
        self._train_loader: DataLoader | None = None
        self._steps_per_epoch = 0  # counted when the train loader is built, before any resume
        self._eval_loader: DataLoader | None = None
        self.train_sampler: ResumableSampler | None = None
        self.metrics = {}
        for metric in metrics:
            name = metric if isinstance(metric, str) else type(metric).__name__.lower()
            self.metrics[name] = metric_from_name(metric) if isinstance(metric, str) else metric

        self.callbacks: list[cb.Callback] = []
        if verbose:
            self.callbacks.append(cb.ConsoleLogger())
        if self.run_dir is not None:
            self.callbacks.append(cb.MetricsLogger(self.run_dir))
            self.callbacks.append(ChecksumLog(self.run_dir))
            self.callbacks.append(cb.Checkpoint(self.run_dir, checkpoint_every, keep_last))
            if keep_best is not None:
                self.callbacks.append(cb.KeepBest(self.run_dir, keep_best, keep_best_mode))
        self.callbacks.extend(callbacks)

        # Where the run stands; all of it goes into checkpoints.
        self.step, self.epoch, self.batch_in_epoch = 0, 0, 0
        self.stop_reason: str | None = None
        self.last_eval: dict[str, float] = {}
        self._bar = None  # the progress bar while fit runs
        self._continuing = False  # set by resume() and the first fit: run_dir is this run's

    # ----- data, built on first use -------------------------------------------------------------
    @property
    def train_loader(self) -> DataLoader:
        """The training batches, in each epoch's order from ``train_sampler``."""
        if self._train_loader is None:
            self._build_train_loader()
        return self._train_loader

    @property
    def steps_per_epoch(self) -> int:
        """Batches in a whole epoch (building the train loader if needed)."""
        if self._train_loader is None:
            self._build_train_loader()
        return self._steps_per_epoch

    def _build_train_loader(self) -> None:
        train_set = _dataset(self._train_source)
        self.train_sampler = ResumableSampler(train_set, self.shuffle, seed=self.seed)
        self._train_loader = DataLoader(
            train_set, batch_size=self.batch_size, sampler=self.train_sampler,
            drop_last=self.drop_last, generator=Generator(self.seed),  # worker seeds
            **self.loader_options,
        )  # fmt: skip
        self._steps_per_epoch = len(self._train_loader)

    @property
    def eval_loader(self) -> DataLoader | None:
        """The evaluation batches (None without an eval set)."""
        if self._eval_loader is None and self._eval_source is not None:
            self._build_eval_loader()
        return self._eval_loader

    def _build_eval_loader(self) -> None:
        eval_set = _dataset(self._eval_source)
        self._eval_loader = self._loader_for_evaluation(eval_set, self.eval_batch_size)

    def prepare(self) -> None:
        """Build the data loaders and the scheduler now if they were given as functions.
        ``fit`` and ``load_state_dict`` call it first, so that dataset code drawing from the
        default random stream draws at the same point in a run and in its resumed copy, and a
        scheduler sets the learning rate before the first step."""
        if self._train_loader is None:
            self._build_train_loader()
        if self._eval_loader is None and self._eval_source is not None:
            self._build_eval_loader()
        if self._build_scheduler is not None:
            build, self._build_scheduler = self._build_scheduler, None
            self._scheduler = build(self)

    @property
    def scheduler(self):
        """The LR scheduler (built now if it was given as a function of the trainer)."""
        if self._build_scheduler is not None:
            self.prepare()
        return self._scheduler

    @scheduler.setter
    def scheduler(self, scheduler) -> None:
        self._scheduler, self._build_scheduler = scheduler, None

    # ----- the loop -----------------------------------------------------------------------------
    def fit(self) -> dict[str, float]:
        """Train until ``epochs`` (or ``max_steps``) are done or a callback stops the run;
        returns the last evaluation's metrics."""
        fresh = self.run_dir is not None and not (self._continuing or self.step > 0)
        if fresh:
            check_run_dir_is_free(self.run_dir)  # before any data is read or file written
            run_dir_existed = self.run_dir.exists()
        try:
            return self._fit()
        except Exception:
            if fresh and cb.latest_checkpoint(self.run_dir) is None:
                self._undo_start(run_dir_existed)
            raise

    def _undo_start(self, run_dir_existed: bool) -> None:
        """Leave ``run_dir`` as this run found it (missing, or empty): the run failed before
        its first checkpoint, so nothing it wrote can be resumed, and a corrected rerun with the
        same ``run_dir`` must not be refused for holding its files."""
        if self.run_dir.is_dir():
            for entry in self.run_dir.iterdir():  # all of it is this run's: it started empty
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
            if not run_dir_existed:
                self.run_dir.rmdir()
        self._continuing = False

    def _fit(self) -> dict[str, float]:
        if self.accel is not None:  # process-wide, said once on standard error when turned on
            accel.enable() if self.accel else accel.disable()
        self.prepare()
        self._start_run()
        self._call("on_fit_start")
        total = self.epochs * self.steps_per_epoch
        if self.max_steps is not None:
            total = min(total, self.max_steps)
        bar = self._bar = progress(total, "train", enabled=self.show_progress, initial=self.step)
        window = _fresh_metrics(self.metrics)  # running values since the last log line
        started, started_step = time.perf_counter(), self.step
        while not self.finished():
            self.model.train()
            # The data order and the worker seeds follow (epoch, batch): a resumed epoch matches.
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
        if self.compile:
            loss, outputs = self._compiled_update(batch)
            targets = batch[1]
        else:
            loss, outputs, targets = self._update(batch)
        scheduler = self.scheduler
        if scheduler is not None and not isinstance(scheduler, optim.ReduceLROnPlateau):
            scheduler.step_batch()
        return loss, outputs, targets

    def _update(self, batch) -> tuple[Tensor, Any, Any]:
        """``compute_loss``, backward, clipping and the optimizer step."""
        loss, outputs, targets = self.compute_loss(batch)
        self.optimizer.zero_grad()
        loss.backward()
        if self.grad_clip is not None:
            optim.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        self.optimizer.step()
        return loss, outputs, targets

    def _compiled_update(self, batch) -> tuple[Tensor, Any]:
        """``_update`` as a static graph traced once per batch shape (``buildingai.compile``);
        returns ``(loss, outputs)``."""
        if not (isinstance(batch, (tuple, list)) and len(batch) == 2
                and all(isinstance(part, Tensor) for part in batch)):  # fmt: skip
            raise BuildingAIError(
                f"compile: true needs batches of (inputs, targets) tensors; got "
                f"{type(batch).__name__}",
                help="set compile: false for other batch structures, or collate to two tensors",
            )
        if self._compiled is None:
            signature = [
                TensorSpec((None, *part.shape[1:]), part.dtype, name)
                for part, name in zip(batch, ("inputs", "targets"))
            ]
            self._compiled = compile_step(
                lambda inputs, targets: self._update((inputs, targets))[:2], signature
            )
        return self._compiled(*batch)

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
        if dataset is not None:
            loader = self._loader_for_evaluation(dataset, batch_size or self.eval_batch_size)
        else:
            loader = self.eval_loader
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

    def _loader_for_evaluation(self, dataset, batch_size: int) -> DataLoader:
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

    def _start_run(self) -> None:
        """Write ``config.yaml`` and a session of the run record into ``run_dir``, which from
        now on is this run's (a later ``fit`` continues there)."""
        if self.run_dir is None:
            return
        self._continuing = True
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.config is not None:
            self.config.to_yaml(self.run_dir / "config.yaml")
        config = self.config.to_dict() if self.config is not None else None
        append_session(self.run_dir, self.step, seed=self.seed, config=config)

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
            "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
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
        self.prepare()
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
        none (a fresh run). Either way ``fit`` then continues in ``run_dir``, whatever it
        holds."""
        if path is None:
            if self.run_dir is None:
                raise CheckpointError("resume() without a path needs a run_dir")
            self._continuing = True
            path = cb.latest_checkpoint(self.run_dir)
            if path is None:
                return False
        self.load_state_dict(load(path))
        self._continuing = True
        return True

    # ----- building from a config ---------------------------------------------------------------
    @classmethod
    def from_config(cls, config: Config | dict, *, resume: bool = False, **overrides) -> Trainer:
        """Build the model, optimizer, loss and callbacks from ``config`` (checked against
        ``DEFAULTS`` and ``RULES``) and return a Trainer; ``resume=True`` continues from the
        newest checkpoint in ``run_dir`` if there is one. ``overrides`` go to the constructor
        (``show_progress=False``, extra ``callbacks=[...]``).

        The datasets (``data.train``, ``data.eval``) are checked here but built when the data
        is first needed, as is the scheduler (it counts the batches of an epoch): building a
        Trainer reads no data, as constructing a model does not in PyTorch or Keras. The
        top-level ``lr`` is shorthand for ``optim.lr`` and ``batch_size`` is the train loader's
        batch size::

            config = Config(batch_size=256, lr=1e-3, model=dict(type="CustomResNet", depth=50))
            trainer = Trainer.from_config(config)   # then trainer.fit()
        """
        config = validate_config(load_config(config))
        # every class's arguments are checked before anything is built or read
        MODELS.check(config.model, path="model")
        OPTIMIZERS.check(config.optim, skip=1, path="optim")
        LOSSES.check(config.loss, path="loss")
        if config.scheduler is not None:
            SCHEDULERS.check(config.scheduler, skip=1, path="scheduler")
        check_dataset(config.data.train, "data.train")
        if config.data.eval:
            check_dataset(config.data.eval, "data.eval")
        if config.retain_freed_memory:
            retain_freed_memory()
        if config.threads is not None or config.one_pool is not None:
            set_num_threads(config.threads or get_num_threads(), gemm=config.one_pool)
        manual_seed(config.seed)  # the model's initial weights come from the default stream
        model = MODELS.build(config.model, path="model")
        if config.device != "cpu":
            model.to(config.device)
        optimizer = OPTIMIZERS.build(config.optim, model.parameters(), path="optim")
        loss = LOSSES.build(config.loss, path="loss")
        scheduler = None
        if config.scheduler is not None:
            scheduler = partial(_scheduler_from_config, config, optimizer)
        checkpoint = config.checkpoint
        stopping = []
        if config.early_stopping is not None:
            try:
                stopping.append(cb.EarlyStopping(**config.early_stopping.to_dict()))
            except TypeError as error:
                raise ConfigError(
                    f"cannot build EarlyStopping from early_stopping: {error}",
                    help="its keys: metric, mode, patience, min_delta",
                ) from None
        train_set = partial(build_dataset, config.data.train, "data.train")
        eval_set = (
            partial(build_dataset, config.data.eval, "data.eval") if config.data.eval else None
        )
        trainer = cls(
            model, optimizer, train_set, eval_set=eval_set, loss=loss, scheduler=scheduler,
            epochs=config.epochs, max_steps=config.max_steps, batch_size=config.batch_size,
            eval_batch_size=config.eval_batch_size, shuffle=config.data.shuffle,
            drop_last=config.data.drop_last, num_workers=config.data.num_workers,
            prefetch=config.data.prefetch, metrics=list(config.metrics), run_dir=config.run_dir,
            checkpoint_every=checkpoint.every_steps, keep_last=checkpoint.keep_last,
            keep_best=checkpoint.keep_best, keep_best_mode=checkpoint.mode,
            grad_clip=config.grad_clip, log_every=config.log_every, seed=config.seed,
            device=config.device, show_progress=config.progress, config=config,
            compile=config.compile, accel=config.accel,
            callbacks=stopping + trackers_from_config(config.trackers)
            + list(overrides.pop("callbacks", [])), **overrides,
        )  # fmt: skip
        if resume:
            trainer.resume()
        return trainer


def _scheduler_from_config(config: Config, optimizer: optim.OptimizerBase, trainer: Trainer):
    """The scheduler ``config.scheduler`` describes; positions count epochs of ``trainer``."""
    fill = {"steps_per_epoch": trainer.steps_per_epoch, "epochs": config.epochs}
    return SCHEDULERS.build(config.scheduler, optimizer, path="scheduler", fill=fill)


def _dataset(source):
    """A dataset given as itself or as a function without arguments that builds it."""
    if hasattr(source, "__len__") or not callable(source):
        return source
    return source()


def next_free_run_dir(run_dir: str | os.PathLike) -> Path:
    """``run_dir-2``, ``run_dir-3``, ...: the first that does not exist or is empty."""
    run_dir = Path(run_dir)
    number = 2
    while True:
        candidate = run_dir.with_name(f"{run_dir.name}-{number}")
        if not candidate.exists() or (candidate.is_dir() and not any(candidate.iterdir())):
            return candidate
        number += 1


def check_run_dir_is_free(run_dir: str | os.PathLike) -> None:
    """Raise ``RunDirExistsError`` unless ``run_dir`` is missing or an empty directory: a new run
    must not overwrite, truncate or prune the files of an earlier one."""
    run_dir = Path(run_dir)
    if not run_dir.exists():
        return
    if not run_dir.is_dir():
        raise RunDirExistsError(
            f"run_dir {str(run_dir)!r} is a file, not a directory",
            help=f"choose another run_dir, e.g. run_dir={next_free_run_dir(run_dir)}",
        )
    entries = sorted(entry.name for entry in run_dir.iterdir())
    if entries:
        shown = ", ".join(entries[:4]) + (", ..." if len(entries) > 4 else "")
        raise RunDirExistsError(
            f"run_dir {str(run_dir)!r} already holds files ({shown}); a new run never "
            "overwrites them",
            help="continue that run with --resume (Trainer.from_config(..., resume=True)), or "
            f"start a new one elsewhere, e.g. run_dir={next_free_run_dir(run_dir)}",
        )


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
