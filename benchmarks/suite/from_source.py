"""Models written once, for PyTorch, and run on both libraries: a source text is executed as it
is and once more with its three import lines changed to BuildingAI's, and one training step of
each (eager, ``buildingai.compile``, ``torch.compile``) is driven from NumPy batches.

The real training workloads (``gpt``, ``resnet18``, ``lstm-lm``) are built this way, so the
model the suite times on BuildingAI is the text a PyTorch user wrote, not a port of it.
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

TORCH_IMPORTS = "import torch\nimport torch.nn as nn\nfrom torch.nn import functional as F\n"
BUILDINGAI_IMPORTS = "import buildingai as torch\nimport buildingai.nn as nn\nfrom buildingai.nn import functional as F\n"
LIBRARIES = ("pytorch", "buildingai")
_loaded: dict[tuple[str, str], types.ModuleType] = {}


def source_for(path: Path, library: str) -> str:
    """The text of ``path`` as ``library`` runs it: unchanged for PyTorch, its import lines
    swapped for BuildingAI (the only lines that differ)."""
    text = path.read_text()
    if text.count(TORCH_IMPORTS) != 1:
        raise ValueError(
            f"{path.name} must import PyTorch exactly as\n{TORCH_IMPORTS}once, so that only "
            "those lines change for BuildingAI"
        )
    if library not in LIBRARIES:
        raise ValueError(f"library {library!r}: choose from {LIBRARIES}")
    return text if library == "pytorch" else text.replace(TORCH_IMPORTS, BUILDINGAI_IMPORTS)


def load(path: Path, library: str) -> types.ModuleType:
    """``path`` executed as a module on ``library`` (cached: classes are built once)."""
    key = (str(path), library)
    if key not in _loaded:
        name = f"{path.stem}_on_{library}"
        module = types.ModuleType(name)
        module.__file__ = str(path)
        sys.modules[name] = module  # dataclasses look their module up while the class is built
        exec(compile(source_for(path, library), str(path), "exec"), module.__dict__)
        _loaded[key] = module
    return _loaded[key]


def library_module(library: str) -> types.ModuleType:
    if library == "pytorch":
        import torch

        return torch
    import buildingai

    return buildingai


class SourceStep:
    """One training step of a model built from a source text: ``make_function(model)`` is the
    step, ``function(*fixed, *carried)``, which returns the loss, or ``(loss, *carried)`` for
    state carried from step to step (an LSTM's hidden state). ``fixed`` and ``carried`` start as
    NumPy arrays.

    Implements the harness's ``TrainStep``: ``step()`` and ``state_dict()`` (NumPy arrays under
    the source's names), plus ``gradients()``.
    """

    def __init__(
        self,
        library: str,
        model,
        optimizer,
        make_function: Callable,
        fixed: Sequence[np.ndarray],
        carried: Sequence[np.ndarray] = (),
    ) -> None:
        self.library, self.model, self.optimizer = library, model, optimizer
        self.make_function = make_function
        self.function = make_function(model)
        self.fixed = [self._tensor(array) for array in fixed]
        self.carried = [self._tensor(array) for array in carried]

    def _tensor(self, array: np.ndarray):
        return library_module(self.library).tensor(np.array(array))

    def step(self):
        out = self.function(*self.fixed, *self.carried)
        if isinstance(out, tuple):
            loss, *self.carried = out
            return loss
        return out

    def state_dict(self) -> dict:
        return {k: _numpy(v) for k, v in self.model.state_dict().items()}

    def gradients(self) -> dict:
        """The last step's parameter gradients by name (the cross-check's round-off filter)."""
        return {k: _numpy(p.grad) for k, p in self.model.named_parameters() if p.grad is not None}


def _numpy(value) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach()
    return np.array(value.numpy())


class TimedFirstCall:
    """A step whose first call is timed (``first_call_s``): for a compiled step, the time from
    nothing compiled to the first step's result, compilation included."""

    def __init__(self, stepper, setup_s: float = 0.0) -> None:
        self.stepper, self.first_call_s, self._setup_s = stepper, None, setup_s

    def step(self):
        if self.first_call_s is not None:
            return self.stepper.step()
        start = time.perf_counter()
        loss = self.stepper.step()
        float(loss.item())  # the result is ready
        self.first_call_s = self._setup_s + time.perf_counter() - start
        return loss

    def __getattr__(self, name):  # state_dict, gradients, model, ...
        return getattr(self.stepper, name)


def buildingai_compiled(stepper: SourceStep) -> TimedFirstCall:
    """``stepper``'s function traced by ``buildingai.compile`` for its inputs' exact shapes."""
    import buildingai as bai

    start = time.perf_counter()
    tensors = [*stepper.fixed, *stepper.carried]
    specs = [bai.TensorSpec(tuple(t.shape), t.dtype) for t in tensors]
    stepper.function = bai.compile(stepper.function, specs)
    return TimedFirstCall(stepper, time.perf_counter() - start)


def torch_compiled(stepper: SourceStep) -> TimedFirstCall:
    """``stepper`` with its model wrapped by ``torch.compile`` (inductor), as a PyTorch user
    compiles a model (nanoGPT's ``model = torch.compile(model)``): forward and backward run
    compiled, the clipping and the optimizer step stay eager, as in such a training loop."""
    import torch

    start = time.perf_counter()
    stepper.function = stepper.make_function(torch.compile(stepper.model))
    return TimedFirstCall(stepper, time.perf_counter() - start)


def load_weights(library: str, model, weights: dict[str, np.ndarray]):
    """``model`` with ``weights`` (NumPy arrays by state-dict name) copied in."""
    lib = library_module(library)
    model.load_state_dict({k: lib.tensor(np.array(v)) for k, v in weights.items()})
    return model


def state_as_numpy(model) -> dict[str, np.ndarray]:
    return {k: _numpy(v) for k, v in model.state_dict().items()}
