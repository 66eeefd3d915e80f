"""The op record: everything about one primitive op in one place.

An op is a class with a single instance. ``forward`` computes on backend arrays with the array
namespace ``xp`` (NumPy or CuPy), so the same code serves both devices. ``backward`` receives the
op's context (the graph node) and the output gradient as *Tensors* and returns one gradient per
input, written with differentiable Tensor operations: running it with gradients on yields
higher-order derivatives for free. ``check`` (optional) validates inputs before forward, for every
backend alike. ``infer`` gives the output's abstract value (shape, dtype, device) without running
the op, ``cost`` its FLOPs and bytes moved (see ``ops/abstract.py``), and ``to_onnx`` writes it
into an ONNX graph.
"""

from __future__ import annotations

from ..errors import BuildingAIError, DeviceError, DTypeError, ShapeError
from .abstract import memory_cost

# The dispatcher (``autograd.dispatch.apply``), installed by the autograd layer when it loads. The
# op layer sits below autograd, so it receives the function instead of importing it.
_dispatch = None


def install_dispatcher(apply_function) -> None:
    """Let ``op(*inputs, **attrs)`` run ops through ``apply_function``."""
    global _dispatch
    _dispatch = apply_function


class Op:
    """Base class of every primitive op record.

    Class attributes describe the op to dispatch, the backward engine, tracers and exporters:

    - ``name``: the op's name in errors, graphs and profiles.
    - ``save_inputs`` / ``save_output``: whether backward reads the input values / the output
      value. The engine guards exactly these against in-place modification.
    - ``differentiable``: False for ops with no gradient (comparisons, argmax...).
    - ``view``: True when the output may share memory with the first input (reshape, transpose...).
    - ``check``: ``None`` or a method ``check(self, *arrays, **attrs)`` run before ``forward``.
      An op whose backend call already rejects every bad input can instead override
      ``describe_failure`` to explain the rejection, and cost nothing on the happy path.
    - ``checks_values``: True when ``check`` reads the input values (an index in range, a
      probability in [0, 1]), not only their shapes and dtypes. A traced graph makes the checks
      of the second kind once, when it is traced; it makes this op's on every run
      (``dispatch.run_forward``), where a negative index would otherwise pick a wrong element
      silently.
    - ``to_onnx(emit, inputs, output, attrs)`` (optional): the op's one ONNX mapping; a record
      without it cannot be exported (``export.check_onnx`` lists such ops).
    - ``fusion``: for element-wise ops whose forward is one backend function on same-dtype
      floating operands, ``(function name, extra trailing argument or None)``; the graph's
      element-wise fusion pass generates kernels from it (and a test checks it against
      ``forward``).
    - ``autocast``: the dtype the op computes in under ``buildingai.amp.autocast``: ``"low"``
      (float32 inputs cast to the autocast dtype: matmul, linear, conv), ``"float32"`` (float16
      and bfloat16 inputs cast to float32: softmax, norms, losses, reductions, exp/log) or
      ``"promote"`` (the default: floating inputs of different dtypes cast to the widest).
    - ``effectful``: True when a call does more than compute its output from its inputs (a
      random draw, an optimizer update): graph passes never merge, fold or drop such a node.
    - ``add_grad_into``: ``None`` or a method ``add_grad_into(self, total, grad, attrs)`` that
      adds the gradient for the op's one input straight into ``total``, an array of that
      input's shape the backward engine owns: for an op whose gradient scatters ``grad`` into
      zeros (a basic index), the engine then builds no zero array and no full-size sum.
    - ``grad_block``: ``None`` or a method ``grad_block(self, shape, attrs)`` that names the
      part of its input's gradient (``shape``) that the op's gradient fills, as ``(axis, start,
      stop)`` along one axis, or None for a call that fills no such block: the engine then
      copies the pieces of a split into one new array instead of adding them into zeros.
    - ``accelerated``: the faster kernels registered for this op in ``buildingai.accel`` that
      are active now (empty when acceleration is off); set by the registry, never by the record.
      ``accelerated_into``: the same for ``add_grad_into``.
    """

    name: str = "op"
    save_inputs: bool = True
    save_output: bool = False
    differentiable: bool = True
    view: bool = False
    check = None
    checks_values: bool = False
    fusion: tuple | None = None
    autocast: str = "promote"
    effectful: bool = False
    add_grad_into = None
    grad_block = None
    accelerated: tuple = ()
    accelerated_into: tuple = ()

    def __call__(self, *inputs, **attrs):
        """Run this op through dispatch: ``CONV2D(x, w, stride=...)``. Backward rules use this
        for ops that have no Tensor method, so higher-order graphs record them too."""
        return _dispatch(self, *inputs, **attrs)

    def forward(self, ctx, xp, *arrays, **attrs):
        """Compute the output array from input arrays (and Python scalars)."""
        raise NotImplementedError(f"op '{self.name}' has no forward")

    def backward(self, ctx, grad):
        """Return a tuple with one gradient Tensor (or None) per input."""
        raise BuildingAIError(f"[{self.name}] has no gradient")

    def infer(self, *specs, **attrs):
        """The ``ValueSpec`` of the output (a tuple of them for several outputs) from the input
        ``ValueSpec`` s (Python scalars and None passed as themselves), without running."""
        raise NotImplementedError(f"op '{self.name}' has no infer")

    def cost(self, *specs, **attrs) -> tuple:
        """``(flops, bytes_read, bytes_written)`` of one call on inputs of these specs: by
        default every input read once, the output written once, one FLOP per output element.
        Contractions (matmul, conv...) override it."""
        return memory_cost(specs, self.infer(*specs, **attrs))

    def describe_failure(self, exc: Exception, arrays: list, attrs: dict) -> BuildingAIError:
        """Turn a backend exception into an error that names this op and its inputs."""
        shapes = ", ".join(_describe(a) for a in arrays)
        kinds = {_array_kind(a) for a in arrays if hasattr(a, "shape")}
        if len(kinds) > 1:
            return DeviceError(
                f"[{self.name}] inputs live on different devices ({shapes})",
                help="move them to one device with .to(device) first",
            )
        message = str(exc)
        if "broadcast" in message:
            return ShapeError(
                f"[{self.name}] shapes {shapes} cannot be broadcast together",
                help="each dimension must match or be 1; reshape or unsqueeze an input to align it",
            )
        if isinstance(exc, TypeError) and ("dtype" in message or "ufunc" in message):
            return DTypeError(f"[{self.name}] unsupported dtype combination ({shapes}): {message}")
        return BuildingAIError(f"[{self.name}] failed on inputs ({shapes}): {message}")

    def __repr__(self) -> str:
        return f"<op {self.name}>"


def _array_kind(array) -> str:
    """The array's library, "cupy" or "numpy" (NumPy subclasses included): arrays of different
    libraries live on different devices."""
    return "cupy" if type(array).__module__.startswith("cupy") else "numpy"


def _describe(value) -> str:
    if hasattr(value, "shape"):
        return f"{tuple(value.shape)} {value.dtype}"
    return repr(value)
