"""The Tensor: a backend array, plus what autograd needs to know about it.

This file holds only the Tensor's own state and accessors. Math methods (``x.exp()``,
``x.sum(axis=1)``, ``x + y``...) are the public functions of ``buildingai.functions``, attached in
one visible table by ``buildingai.functions.methods``.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..backend import accounting as _accounting
from ..backend import device as _device
from ..backend.accounting import record as _count_memory
from ..backend.dtypes import is_floating
from ..errors import AutogradError, DTypeError
from ..utils.hooks import RemovableHandle
from .state import MODULE_CALLS


class _Size(int):
    """``x.size`` is the element count (NumPy habit) and ``x.size()`` / ``x.size(dim)`` the shape
    (PyTorch habit)."""

    def __new__(cls, shape: tuple[int, ...]):
        count = 1
        for extent in shape:
            count *= extent
        size = super().__new__(cls, count)
        size._shape = shape
        return size

    def __call__(self, dim: int | None = None):
        return self._shape if dim is None else self._shape[dim]


# What a tensor's version counter reads before it has one: never changed in place.
UNCHANGED = (0, None)


def version_counter(tensor) -> list:
    """``tensor``'s version counter, [in-place modification count, name of the last such op],
    shared with its views and bumped by every in-place op. A tensor gets one when it is first
    shared (a view, a detached tensor, a saved output) or changed: until then it reads as
    ``UNCHANGED``, and an op's output costs no list."""
    counter = tensor._version
    if counter is None:
        counter = tensor._version = [0, None]
    return counter


def bump_version(tensor, name: str) -> None:
    """Count an in-place change of ``tensor``'s values (and its views'), made by ``name``: a
    graph that saved the old values then refuses to run backward."""
    counter = version_counter(tensor)
    counter[0] += 1
    counter[1] = name


class Tensor:
    """An n-dimensional array that can record how it was computed.

    Attributes:
        array: the backend array (``numpy.ndarray`` on the CPU, ``cupy.ndarray`` on a GPU). Ops
            read and write it; ``tensor.data`` is PyTorch's spelling of the same memory as a
            Tensor outside the graph.
        requires_grad: whether gradients flow to this tensor.
        grad: the accumulated gradient (a Tensor) of a leaf, or None.
    """

    __slots__ = (
        "array",
        "requires_grad",
        "grad",
        "_node",
        "_version",
        "_base",
        "_hooks",
        "_post_hooks",
        "__weakref__",
    )

    def __array_ufunc__(self, ufunc, method: str, *inputs, **kwargs):
        """How NumPy treats a Tensor operand. ``array * tensor`` is ``tensor.__rmul__``, so the
        result is a Tensor; ``array -= tensor`` (``p.array -= lr * p.grad``, and every in-place
        operator) updates the array in place with the tensor's values, outside the graph as every
        write through ``.array`` is; any other ufunc on a Tensor is refused (use the Tensor's op).
        """
        if not kwargs and len(inputs) == 2 and inputs[1] is self and method == "__call__":
            reflected = _REFLECTED.get(ufunc)
            if reflected is not None:
                return getattr(self, reflected)(inputs[0])
        out = kwargs.get("out")
        if method == "__call__" and out and not any(isinstance(t, Tensor) for t in out):
            arrays = [value.array if isinstance(value, Tensor) else value for value in inputs]
            return ufunc(*arrays, **kwargs)
        raise TypeError(
            f"NumPy's {ufunc.__name__} cannot take a Tensor: use the Tensor op (for example "
            f"buildingai.{ufunc.__name__}(x) or x.{ufunc.__name__}()), or np.{ufunc.__name__}("
            "x.numpy()) for a NumPy result outside the graph"
        )

    def __init__(self, data, requires_grad: bool = False) -> None:
        if not isinstance(data, _device.ARRAY_TYPES):
            data = np.asarray(data)
        self.array = data
        if _accounting.tracking:  # buildingai.memory.stats(), only while someone asks for it
            _count_memory(data, "tensor", MODULE_CALLS.stacks[1])
        self.grad = None
        self._node = None  # the graph node that produced this tensor; None for leaves
        self._version = None  # its version counter, made when first shared or changed
        self._base = None  # the tensor this one is a view of, if any
        self._hooks = None
        self._post_hooks = None  # hooks run after backward accumulated into .grad (leaves)
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    # ----- the values outside the graph -------------------------------------------------------
    @property
    def data(self) -> Tensor:
        """PyTorch's ``tensor.data``: a Tensor over the same memory that autograd does not see.

        Writing through it changes this tensor's values without a record in the graph and
        without a version bump: ``p.data -= lr * p.grad``, ``p.data.add_(p.grad, alpha=-lr)``
        and ``p.data.copy_(source)`` all update the parameter ``p``. Prefer ``detach()`` (which
        shares the version counter, so autograd notices a later write) where a value is kept.
        """
        return Tensor(self.array)

    @data.setter
    def data(self, values) -> None:
        """``p.data = other``: ``p`` now holds ``other``'s memory (a Tensor or an array)."""
        array = values.array if isinstance(values, Tensor) else values
        if not isinstance(array, _device.ARRAY_TYPES):
            array = np.asarray(array)
        self.array = array

    # ----- what the tensor is --------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    @property
    def ndim(self) -> int:
        return self.array.ndim

    @property
    def size(self) -> _Size:
        return _Size(self.array.shape)

    def numel(self) -> int:
        return int(self.array.size)

    @property
    def nbytes(self) -> int:
        """Bytes the values take: ``numel() * itemsize``."""
        return int(self.array.nbytes)

    @property
    def itemsize(self) -> int:
        """Bytes per element (``element_size()``)."""
        return int(self.array.itemsize)

    def dim(self) -> int:
        return self.array.ndim

    @property
    def device(self) -> _device.Device:
        return _device.device_of(self.array)

    @property
    def is_cuda(self) -> bool:
        """True when the tensor lives on a CUDA GPU, as PyTorch's ``x.is_cuda``."""
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    @property
    def is_xpu(self) -> bool:
        """Always False: BuildingAI runs on the CPU and on CUDA GPUs, not on Intel XPUs."""
        return False

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def grad_fn(self):
        """The graph node that produced this tensor (None for leaves)."""
        return self._node

    @property
    def version(self) -> int:
        """How many times this tensor (or a view sharing its memory) was modified in place."""
        return (self._version or UNCHANGED)[0]

    def __len__(self) -> int:
        if self.array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.array.shape[0]

    def __bool__(self) -> bool:
        if self.array.size != 1:
            raise ValueError(
                f"the truth value of a tensor with {self.array.size} elements is ambiguous; "
                "use .any() or .all()"
            )
        return bool(self.array.reshape(()))

    def __int__(self) -> int:
        return int(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __index__(self) -> int:
        if self.array.dtype.kind not in "iu" or self.array.size != 1:
            raise TypeError("only integer tensors of one element can be used as an index")
        return int(self.item())

    __hash__ = object.__hash__

    # ----- leaving the framework -------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """A host NumPy copy of the values (never part of the graph)."""
        if type(self.array) is np.ndarray:
            return self.array.copy()
        return _device.to_device(self.array, _device.CPU)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """``np.asarray(tensor)``: the values as a host NumPy array (never part of the graph)."""
        array = _device.to_device(self.array, _device.CPU)
        return array if dtype is None else array.astype(dtype, copy=False)

    def item(self):
        """The single value of a one-element tensor, as a Python number."""
        if self.array.size != 1:
            raise ValueError(
                f"item() needs a tensor with one element, got shape {tuple(self.shape)}"
            )
        return self.array.reshape(()).item()

    def tolist(self):
        return _device.to_device(self.array, _device.CPU).tolist()

    # ----- autograd state ----------------------------------------------------------------------
    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Mark a leaf tensor as needing gradients (floating dtypes only)."""
        if requires_grad and not is_floating(self.array.dtype):
            raise DTypeError(
                f"only floating-point tensors can require gradients, got {self.array.dtype}",
                help="convert first, e.g. x.astype('float32').requires_grad_()",
            )
        if not requires_grad and self._node is not None:
            raise AutogradError(
                "requires_grad_(False) on a non-leaf tensor; use .detach() to cut it from the graph"
            )
        self.requires_grad = requires_grad
        return self

    def detach(self) -> Tensor:
        """The same values (shared memory, shared version counter) outside the graph."""
        out = Tensor(self.array)
        out._version = version_counter(self)
        return out

    def detach_(self) -> Tensor:
        self._node = None
        self.requires_grad = False
        return self

    def register_hook(self, hook) -> RemovableHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned Tensor replaces
        the gradient. Returns a handle whose ``remove()`` unregisters the hook."""
        if not self.requires_grad:
            raise AutogradError("cannot register a hook on a tensor that does not require grad")
        owner = self._node if self._node is not None else self
        if owner._hooks is None:
            owner._hooks = []
        owner._hooks.append(hook)
        return RemovableHandle(owner._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook) -> RemovableHandle:
        """Call ``hook(tensor)`` on this leaf once backward has accumulated its gradient into
        ``.grad``: during backward, as soon as no later op can add to it. Returns a handle whose
        ``remove()`` unregisters the hook."""
        if not self.requires_grad or self._node is not None:
            raise AutogradError(
                "a post-accumulate gradient hook needs a leaf tensor that requires grad, got "
                + ("a non-leaf tensor" if self._node is not None else "one without requires_grad"),
                help="register it on a Parameter or a tensor created with requires_grad=True",
            )
        if getattr(self, "_post_hooks", None) is None:
            self._post_hooks = []
        self._post_hooks.append(hook)
        _HOOKED_LEAVES[0] += 1
        return RemovableHandle(self._post_hooks, hook, on_remove=_forget_hooked_leaf)

    def retain_grad(self) -> None:
        """Keep ``.grad`` for a non-leaf tensor after backward."""
        if self._node is None:
            return
        ref = weakref.ref(self)

        def keep(grad):
            tensor = ref()
            if tensor is not None:  # (Tensor.__add__ is buildingai.add, attached by functions)
                tensor.grad = grad if tensor.grad is None else tensor.grad + grad

        self.register_hook(keep)

    # ----- printing ----------------------------------------------------------------------------
    def __repr__(self) -> str:
        values = np.array2string(
            _device.to_device(self.array, _device.CPU),
            separator=", ",
            prefix="tensor(",
            precision=4,
            threshold=200,
            edgeitems=3,
        )
        extras = []
        if self.array.dtype not in _DTYPES_SHOWN_WITHOUT_NAME:
            extras.append(f"dtype={self.array.dtype}")
        device = self.device
        if device.type != "cpu":
            extras.append(f"device='{device}'")
        if self._node is not None:
            extras.append(f"grad_fn=<{self._node.op.name}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + values + "".join(", " + e for e in extras) + ")"

    def _repr_html_(self) -> str:
        """What Jupyter shows: shape, dtype, device, gradient state and a few values."""
        from ..utils.notebook import tensor_html

        return tensor_html(self)


# How many post-accumulate hooks are registered: backward looks for hooked leaves only when any are.
_HOOKED_LEAVES = [0]


def _forget_hooked_leaf() -> None:
    _HOOKED_LEAVES[0] -= 1


def hooked_leaves() -> int:
    """The number of registered post-accumulate gradient hooks, in every thread."""
    return _HOOKED_LEAVES[0]


_DTYPES_SHOWN_WITHOUT_NAME = (np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_))

# NumPy calls ufunc(array, tensor) for `array OP tensor`; the tensor's reflected operator answers.
_REFLECTED = {
    np.add: "__radd__",
    np.subtract: "__rsub__",
    np.multiply: "__rmul__",
    np.true_divide: "__rtruediv__",
    np.floor_divide: "__rfloordiv__",
    np.remainder: "__rmod__",
    np.power: "__rpow__",
    np.matmul: "__rmatmul__",
    np.bitwise_and: "__rand__",
    np.bitwise_or: "__ror__",
    np.bitwise_xor: "__rxor__",
    np.left_shift: "__rlshift__",
    np.right_shift: "__rrshift__",
    np.less: "__gt__",
    np.less_equal: "__ge__",
    np.greater: "__lt__",
    np.greater_equal: "__le__",
    np.equal: "__eq__",
    np.not_equal: "__ne__",
}
