"""Weight initialisation, as in ``torch.nn.init``: each function fills a tensor in place (outside
the graph) and returns it.

Randomness is drawn from ``generator`` (a ``buildingai.Generator``) or, when it is None, from the
default generator that ``buildingai.manual_seed`` reseeds. Values are drawn in float64 on the
tensor's device and cast to its dtype.

Inside ``fills_skipped()`` (what ``nn.utils.skip_init`` builds a module in) the functions check
their arguments but leave the tensor as it is and draw nothing.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ..autograd.mode import no_grad
from ..autograd.tensor import Tensor
from ..backend.device import array_namespace
from ..backend.random import Generator, resolve_generator
from ..errors import ArgumentError, ShapeError

_LINEAR_FUNCTIONS = (
    "linear",
    "identity",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended scale of the weights before ``nonlinearity`` (its name in
    ``nn.functional``): 1 for linear/conv/sigmoid, 5/3 for tanh, sqrt(2) for relu,
    sqrt(2 / (1 + slope**2)) for leaky_relu (slope ``param``, default 0.01), 3/4 for selu."""
    if nonlinearity in _LINEAR_FUNCTIONS or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param!r} is not a number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(
        f"unsupported nonlinearity {nonlinearity!r}; use one of "
        f"{list(_LINEAR_FUNCTIONS) + ['sigmoid', 'tanh', 'relu', 'leaky_relu', 'selu']}"
    )


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight laid out as PyTorch does: (out, in, *kernel) for
    Linear and Conv weights, so fan_in = in * kernel size and fan_out = out * kernel size."""
    shape = tuple(tensor.shape)
    if len(shape) < 2:
        raise ValueError(
            f"fan in and fan out cannot be computed for a tensor with fewer than 2 dimensions "
            f"(shape {shape})"
        )
    receptive_field = 1
    for extent in shape[2:]:
        receptive_field *= extent
    return shape[1] * receptive_field, shape[0] * receptive_field


calculate_fan_in_and_fan_out = _calculate_fan_in_and_fan_out


def _fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode {mode!r} is not supported; use 'fan_in' or 'fan_out'")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _backend_generator(tensor: Tensor, generator: Generator | None):
    return resolve_generator(generator).backend_generator(tensor.device)


class _FillState(threading.local):
    skipped = False


_FILL = _FillState()


@contextmanager
def fills_skipped() -> Iterator[None]:
    """Inside this block (on this thread) the fill functions leave tensors uninitialised: they
    check their arguments and return the tensor untouched, without drawing random numbers."""
    previous = _FILL.skipped
    _FILL.skipped = True
    try:
        yield
    finally:
        _FILL.skipped = previous


def _write(tensor: Tensor, values) -> Tensor:
    """Copy ``values`` (an array shaped like ``tensor``) into ``tensor`` outside the graph."""
    with no_grad():
        tensor.copy_(Tensor(values))
    return tensor


# ----- distributions ---------------------------------------------------------------------------
def uniform_(
    tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None
) -> Tensor:
    """Fill with samples of the uniform distribution on [a, b)."""
    if tensor.numel() == 0 or _FILL.skipped:
        return tensor
    draws = _backend_generator(tensor, generator).random(tuple(tensor.shape), dtype="float64")
    return _write(tensor, draws * (b - a) + a)


def normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None
) -> Tensor:
    """Fill with samples of the normal distribution N(mean, std**2)."""
    if tensor.numel() == 0 or _FILL.skipped:
        return tensor
    draws = _backend_generator(tensor, generator).standard_normal(
        tuple(tensor.shape), dtype="float64"
    )
    return _write(tensor, draws * std + mean)


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: Generator | None = None,
) -> Tensor:
    """Fill with samples of N(mean, std**2) conditioned on [a, b] (``a``, ``b`` are absolute
    values, not multiples of ``std``, as in PyTorch).

    Sampling is by rejection: standard normal draws outside the interval are redrawn, in whole
    vectorised rounds sized by the acceptance probability.
    """
    if not a < b:
        raise ValueError(f"trunc_normal_ needs a < b, got a={a}, b={b}")
    if std < 0:
        raise ValueError(f"trunc_normal_ needs std >= 0, got {std}")
    if tensor.numel() == 0 or _FILL.skipped:
        return tensor
    xp = array_namespace(tensor.array)
    shape = tuple(tensor.shape)
    if std == 0:
        return _write(tensor, xp.full(shape, min(max(mean, a), b), dtype="float64"))

    low, high = (a - mean) / std, (b - mean) / std
    accept = 0.5 * (math.erf(high / math.sqrt(2)) - math.erf(low / math.sqrt(2)))
    if accept < 1e-4:
        raise ValueError(
            f"trunc_normal_: [a, b] = [{a}, {b}] holds only {accept:.2e} of N({mean}, {std}**2); "
            "rejection sampling would take too long; choose [a, b] closer to the mean"
        )
    backend = _backend_generator(tensor, generator)
    count = tensor.numel()
    kept = xp.empty((0,), dtype="float64")
    while kept.size < count:
        missing = count - kept.size
        draws = backend.standard_normal(int(missing / accept * 1.1) + 16, dtype="float64")
        draws = draws[(draws >= low) & (draws <= high)]
        kept = xp.concatenate([kept, draws[:missing]])
    values = xp.clip(kept.reshape(shape) * std + mean, a, b)
    return _write(tensor, values)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    if _FILL.skipped:
        return tensor
    with no_grad():
        tensor.fill_(val)
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    return constant_(tensor, 1.0)


# ----- scaled for depth (Glorot, He) -----------------------------------------------------------
def xavier_uniform_(
    tensor: Tensor, gain: float = 1.0, generator: Generator | None = None
) -> Tensor:
    """Glorot & Bengio (2010): U(-bound, bound) with bound = gain * sqrt(6 / (fan_in + fan_out)),
    which keeps the variance of activations and of gradients alike across layers."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std  # a uniform on [-bound, bound] has std bound / sqrt(3)
    return uniform_(tensor, -bound, bound, generator=generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot & Bengio (2010): N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator=generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    fan = _fan(tensor, mode)
    if fan == 0:  # an empty weight has nothing to fill
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """He et al. (2015): U(-bound, bound) with bound = gain * sqrt(3 / fan), where gain comes
    from ``calculate_gain(nonlinearity, a)`` and fan is fan_in (preserves forward variance) or
    fan_out (preserves backward variance)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator=generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """He et al. (2015): N(0, std**2) with std = gain / sqrt(fan)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator=generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Saxe et al. (2013): a (semi-)orthogonal matrix times ``gain``. Dimensions after the first
    are flattened: rows = shape[0], columns = the rest."""
    if tensor.ndim < 2:
        raise ValueError(
            f"orthogonal_ needs a tensor with 2 or more dimensions, got shape {tuple(tensor.shape)}"
        )
    if tensor.numel() == 0 or _FILL.skipped:
        return tensor
    xp = array_namespace(tensor.array)
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flattened = _backend_generator(tensor, generator).standard_normal((rows, cols), dtype="float64")
    if rows < cols:
        flattened = flattened.T
    q, r = xp.linalg.qr(flattened)
    # Multiplying by the signs of R's diagonal makes Q uniformly distributed (Mezzadri, 2007).
    q = q * xp.sign(xp.diagonal(r))
    if rows < cols:
        q = q.T
    return _write(tensor, (q * gain).reshape(tuple(tensor.shape)))


# ----- structure-preserving (identity maps) and sparse -----------------------------------------
def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor (out, in) with the identity matrix (ones on the main diagonal, zeros
    elsewhere): a Linear layer so initialised passes on as many of its inputs as it can."""
    if tensor.ndim != 2:
        raise ShapeError(
            f"[eye_] only tensors with 2 dimensions are supported, got shape {tuple(tensor.shape)}",
            help="for a convolution weight use dirac_",
        )
    if _FILL.skipped:
        return tensor
    xp = array_namespace(tensor.array)
    return _write(tensor, xp.eye(*tensor.shape, dtype=tensor.dtype))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a convolution weight (out, in, *kernel), with 1, 2 or 3 kernel dimensions, with
    the Dirac delta: output channel d of each group copies input channel d at the kernel's
    centre (as many channels as both sides have), so the convolution passes its input on."""
    if tensor.ndim not in (3, 4, 5):
        raise ShapeError(
            "[dirac_] only tensors with 3, 4, or 5 dimensions are supported, got shape "
            f"{tuple(tensor.shape)}",
            help="for a Linear weight use eye_",
        )
    out_channels, in_channels = tensor.shape[0], tensor.shape[1]
    if out_channels % groups != 0:
        raise ArgumentError(
            f"[dirac_] dim 0 must be divisible by groups: {out_channels} output channels, "
            f"groups={groups}"
        )
    if _FILL.skipped:
        return tensor
    xp = array_namespace(tensor.array)
    out_per_group = out_channels // groups
    kept = min(out_per_group, in_channels)
    values = xp.zeros(tuple(tensor.shape), dtype=tensor.dtype)
    centre = tuple(extent // 2 for extent in tensor.shape[2:])
    for group in range(groups):
        for channel in range(kept):
            values[(group * out_per_group + channel, channel, *centre)] = 1
    return _write(tensor, values)


def sparse_(
    tensor: Tensor, sparsity: float, std: float = 0.01, generator: Generator | None = None
) -> Tensor:
    """Martens (2010): fill a 2-D tensor (rows, cols) with N(0, std**2) samples, then set
    ceil(sparsity * rows) entries of every column, at random rows, to zero."""
    if tensor.ndim != 2:
        raise ShapeError(
            f"[sparse_] only tensors with 2 dimensions are supported, got shape "
            f"{tuple(tensor.shape)}"
        )
    if _FILL.skipped:
        return tensor
    rows, cols = tensor.shape
    zeros_per_column = math.ceil(sparsity * rows)
    xp = array_namespace(tensor.array)
    backend = _backend_generator(tensor, generator)
    values = backend.standard_normal((rows, cols), dtype="float64") * std
    # a random permutation of the rows for every column: the ranks of uniform draws
    permutations = xp.argsort(backend.random((rows, cols), dtype="float64"), axis=0)
    zeroed = permutations[:zeros_per_column]  # (zeros_per_column, cols) row indices
    values[zeroed, xp.arange(cols)[None, :]] = 0.0
    return _write(tensor, values)


# The names without the underscore, as older PyTorch code spells them.
uniform = uniform_
normal = normal_
trunc_normal = trunc_normal_
constant = constant_
zeros = zeros_
ones = ones_
xavier_uniform = xavier_uniform_
xavier_normal = xavier_normal_
kaiming_uniform = kaiming_uniform_
kaiming_normal = kaiming_normal_
orthogonal = orthogonal_
eye = eye_
dirac = dirac_
sparse = sparse_

__all__ = [
    "calculate_gain",
    "calculate_fan_in_and_fan_out",
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "zeros_",
    "ones_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
    "eye_",
    "dirac_",
    "sparse_",
    "uniform",
    "normal",
    "trunc_normal",
    "constant",
    "zeros",
    "ones",
    "xavier_uniform",
    "xavier_normal",
    "kaiming_uniform",
    "kaiming_normal",
    "orthogonal",
    "eye",
    "dirac",
    "sparse",
]
