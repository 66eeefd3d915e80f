"""``Distribution``: the base of every probability distribution, and the helpers they share
(argument conversion, validation, broadcasting, drawing noise).

A distribution holds its parameters as Tensors, so ``log_prob``, ``entropy``, ``mean`` and the
reparameterised ``rsample`` are ordinary differentiable computations of them. Shapes follow
PyTorch: ``sample(sample_shape)`` has shape ``sample_shape + batch_shape + event_shape``;
``log_prob(value)`` has the broadcast ``batch_shape`` (one number per independent event).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import functions as F
from ..autograd.dispatch import apply
from ..autograd.mode import no_grad
from ..autograd.tensor import Tensor
from ..backend.dtypes import get_default_dtype
from ..backend.random import Generator
from ..errors import ArgumentError, ShapeError
from ..ops.checks import REQUIRE


class Distribution:
    """A batch of probability distributions of one family.

    Subclasses set ``batch_shape`` and ``event_shape`` and implement ``log_prob`` and what the
    family has in closed form (``rsample`` when a sample is a differentiable function of the
    parameters and parameter-free noise; ``sample`` otherwise). ``Distribution.Normal(...)``,
    ``Distribution.Gamma(...)``... name every family (see ``buildingai.prob``).
    """

    has_rsample = False
    arg_names: tuple[str, ...] = ()  # the tensors the distribution is built from

    def __init__(self, batch_shape: tuple = (), event_shape: tuple = ()) -> None:
        self.batch_shape = tuple(batch_shape)
        self.event_shape = tuple(event_shape)

    # ----- drawing ---------------------------------------------------------------------------
    def rsample(self, sample_shape: Sequence[int] = (), generator: Generator | None = None):
        """A reparameterised sample: gradients flow to the parameters.
        Shape ``sample_shape + batch_shape + event_shape``."""
        raise NotImplementedError(
            f"{type(self).__name__} has no reparameterised sample (its samples are not a "
            "differentiable function of its parameters); use sample() and a score-function "
            "estimator (log_prob(x) * reward) instead"
        )

    def sample(self, sample_shape: Sequence[int] = (), generator: Generator | None = None):
        """A sample without gradient. Shape ``sample_shape + batch_shape + event_shape``."""
        with no_grad():
            return self.rsample(sample_shape, generator)

    # ----- densities and moments -------------------------------------------------------------
    def log_prob(self, value) -> Tensor:
        """log p(value), one number per event: shape ``broadcast(value batch, batch_shape)``."""
        raise NotImplementedError(f"{type(self).__name__}.log_prob is not defined")

    def entropy(self) -> Tensor:
        """The entropy of each distribution of the batch, shape ``batch_shape``."""
        raise NotImplementedError(f"{type(self).__name__} has no closed-form entropy")

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no closed-form mean")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no closed-form variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def arguments(self) -> list[Tensor]:
        """The Tensors this distribution is built from (its parameters, in order)."""
        values = [getattr(self, name) for name in self.arg_names]
        return [value for value in values if isinstance(value, Tensor)]

    def __repr__(self) -> str:
        described = ", ".join(
            f"{name}: {tuple(getattr(self, name).shape)}" for name in self.arg_names
        )
        return f"{type(self).__name__}({described})"

    # ----- helpers for the families ----------------------------------------------------------
    def _extended(self, sample_shape) -> tuple:
        return _as_shape(sample_shape) + self.batch_shape + self.event_shape

    def _noise(self, kind: str, sample_shape, generator, reference: Tensor) -> Tensor:
        """Parameter-free noise of shape ``sample_shape + batch_shape + event_shape`` in
        ``reference``'s dtype and device, drawn from ``generator`` (default: the global one)."""
        shape = self._extended(sample_shape)
        draw = {"normal": F.randn, "uniform": F.rand}[kind]
        return draw(shape, dtype=reference.dtype, device=reference.device, generator=generator)

    def _value(self, value, name: str = "value") -> Tensor:
        """``value`` as a Tensor in this distribution's dtype (for log_prob)."""
        reference = self.arguments()[0]
        if not isinstance(value, Tensor):
            value = F.tensor(np.asarray(value), dtype=reference.dtype, device=reference.device)
        return value


# ----- argument handling ------------------------------------------------------------------------
def as_parameters(family: str, **values) -> list[Tensor]:
    """The parameters of ``family`` as floating Tensors of one dtype, broadcast together.
    Python numbers take the dtype of the Tensors given (the default float if none)."""
    tensors = [v for v in values.values() if isinstance(v, Tensor)]
    dtype = next((t.dtype for t in tensors if t.dtype.kind == "f"), get_default_dtype())
    device = tensors[0].device if tensors else None
    converted = []
    for name, value in values.items():
        if value is None:
            raise ArgumentError(f"[{family}] argument '{name}' is required")
        if not isinstance(value, Tensor):
            try:
                array = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError) as error:
                raise ArgumentError(
                    f"[{family}] {name} must be a Tensor or a number, got {type(value).__name__}"
                ) from error
            value = F.tensor(array, dtype=dtype, device=device)
        elif value.dtype.kind != "f":
            value = value.astype(dtype)
        converted.append(value)
    try:
        shape = np.broadcast_shapes(*(tuple(t.shape) for t in converted))
    except ValueError as error:
        shapes = ", ".join(f"{n} {tuple(t.shape)}" for n, t in zip(values, converted))
        raise ShapeError(
            f"[{family}] the parameters do not broadcast together: {shapes}",
            help="give every parameter the batch shape, or shapes that broadcast to it",
        ) from error
    return [t if tuple(t.shape) == shape else F.broadcast_to(t, shape) for t in converted]


def require(family: str, name: str, tensor: Tensor, condition, wanted: str) -> None:
    """Raise ``ArgumentError`` naming ``family``, ``name`` and the offending values unless
    ``condition(array)`` holds everywhere. The check is an op (``ops.checks.REQUIRE``), so a
    compiled or frozen graph checks the values of every run, not only those it was traced on."""
    apply(REQUIRE, tensor, family=family, name=name, condition=condition, wanted=wanted)


def _as_shape(sample_shape) -> tuple:
    if isinstance(sample_shape, int):
        return (sample_shape,)
    return tuple(int(size) for size in sample_shape)


def sum_rightmost(value: Tensor, count: int) -> Tensor:
    """``value`` summed over its last ``count`` axes."""
    if count == 0:
        return value
    return value.sum(axis=tuple(range(-count, 0)))
