"""The machinery of the op cases: ``Sample`` (one call of an op), ``Draw`` (random inputs, and
the capture of the op's call), ``OpCase`` (how one record is tested) and the ``CASES`` table the
family modules fill with ``case(...)``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import buildingai as bai
from buildingai.autograd.dispatch import DispatchMode, dispatch_mode
from buildingai.ops import all_ops

from ...helpers import torch

try:
    from ml_dtypes import bfloat16
except ImportError:  # an optional extra: the other dtypes are still drawn
    bfloat16 = None

TF = torch.nn.functional
# infer is checked in each; values against PyTorch in float64, ONNX exports in float32
FLOATS = (np.float32, np.float64, np.float16) + ((np.dtype(bfloat16),) if bfloat16 else ())
NOT_DIFFERENTIABLE = "the op has no gradient (differentiable = False)"
NO_ONNX_MAPPING = (
    "the record has no to_onnx: it serves gradients, and training graphs are not exported"
)


def tested_through(forward_op: str) -> str:
    """The reason for a gradient op whose inputs include constants its backward recomputes from
    x: finite differences of the op alone do not apply, ``forward_op``'s second derivatives
    (its case has ``gradgrad``) check its gradient."""
    return f"tested through {forward_op}'s second derivatives against PyTorch"


OPS = {op.name: op for op in all_ops()}


# ----- samples ------------------------------------------------------------------------------------


@dataclass
class Sample:
    """One call of an op: ``inputs`` as ``forward`` receives them (arrays, Python scalars,
    None) and its ``attrs``. ``symbols`` maps ``(input position, axis)`` to the name of a size
    that may be symbolic; ``symbolic_attrs(sizes)`` gives the attrs for symbolic sizes (``sizes``
    maps names to ``DimExpr``) when an attr holds such a size; ``symbol_sizes`` gives the
    concrete size of symbols found only in attrs (factories have no input). ``symbolic_error``
    says why ``infer`` must raise SymbolicSizeError on the symbolic sizes of this call."""

    inputs: tuple
    attrs: dict
    symbols: dict = field(default_factory=dict)
    symbolic_attrs: Callable | None = None
    symbolic_error: str | None = None
    symbol_sizes: dict = field(default_factory=dict)


class _Capture(DispatchMode):
    def __init__(self, name: str) -> None:
        self.name, self.call = name, None

    def before_op(self, op, inputs, attrs) -> None:
        if op.name == self.name and self.call is None:
            self.call = (inputs, dict(attrs))


class Draw:
    """Random inputs for one sample: ``dtype`` for floating inputs; ``n`` and ``m`` sizes shared
    by every axis named ``"n"`` / ``"m"`` (those axes become symbols in symbolic checks). With
    ``mixed``,
    makers may also mix dtypes and Python scalars among the operands (for dtype promotion)."""

    def __init__(
        self, rng: np.random.Generator, dtype, mixed: bool = False, index: int = 0
    ) -> None:
        self.rng, self.dtype, self.mixed, self.index = rng, np.dtype(dtype), mixed, index
        self.n, self.m = int(rng.integers(2, 5)), int(rng.integers(2, 5))
        self._named_axes: dict = {}  # id(tensor) -> (tensor, {axis: name})

    def size(self, low: int = 1, high: int = 4) -> int:
        return int(self.rng.integers(low, high + 1))

    def sizes(self, count_low: int, count_high: int, low: int = 1, high: int = 4) -> tuple:
        return tuple(self.size(low, high) for _ in range(self.size(count_low, count_high)))

    def choice(self, options):
        return options[int(self.rng.integers(len(options)))]

    def variant(self, options):
        """The form of this draw: draws 0, 1, 2... take the options in turn, so that a few
        draws cover them all."""
        return options[self.index % len(options)]

    def tensor(self, array, names: dict, requires_grad: bool = False) -> bai.Tensor:
        """A Tensor of ``array`` whose axes ``names`` ({axis: symbol}) may be symbolic."""
        tensor = bai.Tensor(array, requires_grad=requires_grad)
        self._named_axes[id(tensor)] = (tensor, names)  # the tensor is kept, so ids stay unique
        return tensor

    def names_of(self, tensor) -> dict:
        return self._named_axes.get(id(tensor), (None, {}))[1]

    def dims_of(self, tensor) -> tuple:
        """The shape of a tensor this Draw made, with its named axes as names (``("n", 3)``),
        to make another tensor that shares them."""
        names = self.names_of(tensor)
        return tuple(names.get(axis, size) for axis, size in enumerate(tensor.shape))

    def _tensor(self, dims, array, requires_grad=False) -> bai.Tensor:
        names = {axis: d for axis, d in enumerate(dims) if isinstance(d, str)}
        return self.tensor(array, names, requires_grad)

    def shape(self, dims) -> tuple:
        named = {"n": self.n, "m": self.m}
        return tuple(named.get(d, d) if isinstance(d, str) else d for d in dims)

    def floats(self, *dims, low=-2.0, high=2.0, dtype=None, grad=False) -> bai.Tensor:
        array = self.rng.uniform(low, high, size=self.shape(dims))
        # away from the kinks of relu, abs, round... so that derivatives are defined
        array = np.where(np.abs(array - np.round(array * 2) / 2) < 0.02, 0.3, array)
        return self._tensor(dims, array.astype(dtype or self.dtype), grad)

    def ints(self, *dims, low=0, high=5, dtype=np.int64) -> bai.Tensor:
        return self._tensor(dims, self.rng.integers(low, high, size=self.shape(dims)).astype(dtype))

    def bools(self, *dims) -> bai.Tensor:
        return self._tensor(dims, self.rng.random(self.shape(dims)) < 0.5)

    def capture(self, name: str, run: Callable, symbols=None, symbolic_attrs=None) -> Sample:
        """Run ``run()`` and return the first call of op ``name`` it made. The symbols of an
        input Tensor made by this Draw come from its named axes, unless ``symbols`` is given."""
        observer = _Capture(name)
        with dispatch_mode(observer), np.errstate(all="ignore"):
            run()
        assert observer.call is not None, f"the sample maker never called op '{name}'"
        inputs, attrs = observer.call
        if symbols is None:
            symbols = {}
            for position, value in enumerate(inputs):
                for axis, symbol in self.names_of(value).items():
                    symbols[(position, axis)] = symbol
        arrays = tuple(v.array.copy() if isinstance(v, bai.Tensor) else v for v in inputs)
        return Sample(arrays, attrs, symbols, symbolic_attrs)

    def call(self, name: str, *inputs, symbols=None, symbolic_attrs=None, **attrs) -> Sample:
        """The sample of calling record ``name`` directly on ``inputs`` with ``attrs``."""
        return self.capture(
            name, lambda: OPS[name](*inputs, **attrs), symbols, symbolic_attrs=symbolic_attrs
        )


def backward_of(forward: Callable, *inputs: bai.Tensor, create_graph: bool = False, seed=0):
    """Run ``forward(*inputs)`` and its backward with a random upstream gradient (twice
    differentiated when ``create_graph``): the gradient ops it calls are then captured."""
    out = forward(*inputs)
    weight = np.random.default_rng(seed).standard_normal(out.shape).astype(out.dtype)
    # the upstream gradient needs a gradient too: backward rules linear in it (max pooling's)
    # would otherwise leave nothing to differentiate a second time
    upstream = bai.Tensor(weight, requires_grad=create_graph)
    grads = bai.grad(out, list(inputs), grad_outputs=upstream, create_graph=create_graph)
    if create_graph:
        total = sum((g * g).sum() for g in grads if g is not None)
        bai.grad(total, [*inputs, upstream], allow_unused=True)


# ----- the case record ----------------------------------------------------------------------------


@dataclass(frozen=True)
class OpCase:
    """How one op record is tested.

    make: ``make(draw) -> Sample`` (several draws per op, each dtype of ``dtypes``).
    torch: the PyTorch reference ``torch(*inputs, **attrs)`` (inputs as torch tensors); values
        and first derivatives are compared in float64 (second derivatives with ``gradgrad``).
    gradcheck: check the gradient with finite differences (``buildingai.debug.gradcheck``).
    no_grad: why the gradient is checked neither way.
    grad_inputs: the input positions whose gradient is checked (default: every float input).
    onnx: True to export a one-op graph (at ``onnx_opset``) and compare onnxruntime with
        eager, or why not. ``onnx_domain`` maps input positions to ``(low, high)``: freeze
        traces on random values, so those graph inputs are clamped into the op's domain.
    covered_by: test files (from the repository root) that sweep this op further; each must
        mention the op's name.
    """

    make: Callable
    dtypes: tuple = FLOATS
    torch: Callable | None = None
    gradcheck: bool = False
    no_grad: str | None = None
    gradgrad: bool = False
    grad_inputs: tuple | None = None
    onnx: bool | str = True
    onnx_opset: int = 17
    onnx_domain: dict = field(default_factory=dict)
    atol: float = 1e-10
    rtol: float = 1e-7
    covered_by: tuple = ()


CASES: dict[str, OpCase] = {}


def case(name: str, make: Callable, **options) -> None:
    assert name not in CASES, f"two cases for op '{name}'"
    CASES[name] = OpCase(make, **options)


def torch_dim(axes):
    """torch's ``dim`` for our normalized axes (None: every axis)."""
    return None if axes is None else tuple(axes)


def trailing_sizes(d: Draw, low: int = 0, high: int = 2) -> tuple:
    """Trailing sizes of a random rank (0 to 2 axes of 1 to 4), the first one sometimes the
    second symbolic size ``"m"``."""
    rest = d.sizes(low, high)
    if rest and d.choice((False, True)):
        rest = ("m",) + rest[1:]
    return rest
