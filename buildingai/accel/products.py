"""Matrix products on BuildingAI's threads and on a BLAS of its own: the routing registered
beside ``matmul``, ``linear`` and ``einsum`` (their records in ``ops/linalg.py`` are the
reference, a plain ``a @ b`` on NumPy's BLAS).

In one pool (``set_num_threads(n, gemm=True)``, or the default arrangement while acceleration
is on, below) BuildingAI's threads run the products: a product of at least
``SPLIT_MULTIPLY_ADDS`` is cut into blocks of rows, of columns (where ``b`` is the larger
operand, so that each thread reads only its part of it) or of stacked matrices, one
single-threaded BLAS call per block, all launched in one parallel loop on numba's threads
(``kernels/compiled/gemm.py``), or on the Python pool (``backend.threads.parallel_for``) where
numba is missing. On a BLAS of BuildingAI's own (``own_blas.py``: scipy-openblas64's OpenBLAS,
a second copy held at one thread), every product NumPy's BLAS would thread runs there, cut or
whole, so NumPy's BLAS threads never wake for BuildingAI and stay free for the program's own
products; a matrix-vector product of a large matrix is one GEMV there, or one per block of a
row-major matrix's rows on numba's threads.

Outside one pool the products are NumPy's, and each call that may wake NumPy's BLAS threads is
noted (``threads.blas_called``): their idle spin would hold the cores that element-wise work
split across threads right after it needs (``threads.blas_spinning``).

Registered here:

- ``blas.own_copy`` (switch): load the own copy of OpenBLAS and run one pool's products, and
  the optimizer's scaled sums (``vector_blas.py``), on it.
- ``threads.one_pool`` (switch): with ``blas.own_copy``, one pool on every core is the default
  arrangement (``set_num_threads(None)``).
- ``matmul.routed``, ``linear.routed``, ``linear_relu.routed``, ``einsum.noted``: the kernels
  that route the products.

``enable()`` starts what the switches ask (numba's threads, the library, the thread default),
never the import or the first product; a switch changed afterwards takes effect at the next
``enable()``. ``matmul_array`` and ``einsum_array`` here are the routed twins of ``ops/linalg``'s,
for other accelerated kernels whose products should run in one pool too.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ..backend import threads
from ..backend.precision import gemm_result_dtype
from ..backend.threads import blas_called, gemm_threads, one_pool, own_blas, parallel_for
from ..ops import linalg
from ..ops.linalg import (
    EINSUM,
    LINEAR,
    LINEAR_RELU,
    MATMUL,
    in_math_precision,
    linear_array,
    worth_a_path,
)
from . import own_blas as own_blas_library
from .kernels import compiled
from .kernels.activations import relu
from .kernels.split import elementwise
from .registry import on_enable, register, register_switch

# A product of at least this many multiply-adds is cut across BuildingAI's threads in one pool:
# below it the hand-off costs more than it saves. Handing a part to the Python pool costs several
# times what numba's threads take (docs/design_notes/performance.md), so products stay whole
# longer without numba.
SPLIT_MULTIPLY_ADDS = 1 << 21
PYTHON_SPLIT_MULTIPLY_ADDS = 1 << 24
# NumPy's OpenBLAS runs a product of at most this many multiply-adds on the calling thread
# (65536 x its GEMM_MULTITHREAD_THRESHOLD, 4): smaller products leave its threads asleep.
BLAS_THREADED_MULTIPLY_ADDS = 1 << 18
# The smallest call size that matmul.routed (``registry.call_size``: a.size * b.size, at least
# the multiply-adds) and linear.routed (its multiply-adds) take: smaller products are never routed.
ROUTED_MIN_SIZE = BLAS_THREADED_MULTIPLY_ADDS + 1
# In one pool, a matrix-vector product of a matrix this large or larger runs on the own BLAS, in
# blocks of rows on numba's threads; a smaller one on NumPy's, whose threads share it faster than
# numba's wake up for it.
OWN_GEMV_ELEMENTS = 1 << 20

OWN_COPY = register_switch(
    "blas.own_copy",
    requires=("numba", "scipy_openblas64"),
    description="one pool's products and the optimizer's scaled sums on a BLAS of "
    "BuildingAI's own (a copy of OpenBLAS, or MKL), held at one thread: NumPy's BLAS keeps "
    "its threads",
)
MKL = register_switch(
    "blas.mkl",
    requires=("numba", "scipy_openblas64", "mkl"),
    description="with blas.own_copy, the own BLAS is Intel's MKL on its sequential layer (pip "
    "install 'buildingai[mkl]'), not OpenBLAS: faster float32 products with AVX-512 "
    "(python -m benchmarks.products)",
)
ONE_POOL = register_switch(
    "threads.one_pool",
    requires=("numba", "scipy_openblas64"),
    description="with blas.own_copy, the default arrangement is one pool on every core: "
    "BuildingAI's threads run element-wise work and the products, cut on numba's threads",
)

# What ``_whole_on_own_blas`` calls, set while one pool's own BLAS is loaded:
# {dtype: (its gemm's address, 1 and 0 of the dtype, the slice depth)} and the compiled loop
# that calls it.
_whole = {"calls": {}, "call": None}


def _start() -> None:
    """Load the own BLAS (MKL or OpenBLAS, as the switches ask) and start numba's threads, and
    offer the arrangement they make possible to ``set_num_threads``."""
    own = False
    if OWN_COPY.active:
        own = compiled.use_own_blas(own_blas_library.choose(prefer_mkl=MKL.active))
    if not own:
        _numpy_blas_again()
    else:  # the compiled module use_own_blas imported, and what its uncut call takes
        from .kernels.compiled import gemm

        calls = {
            dtype: (address, dtype.type(1.0), dtype.type(0.0), gemm.SLICE_DEPTH)
            for dtype, address in gemm.ADDRESSES.items()
        }
        _whole.update(calls=calls, call=gemm.whole_product)
    threads.offer(own_blas=own, one_pool=own and ONE_POOL.active)


def _stop() -> None:
    _whole["calls"] = {}
    _numpy_blas_again()
    threads.offer(own_blas=False, one_pool=False)


def _numpy_blas_again() -> None:
    """No own BLAS: the compiled products point back at NumPy's, where an earlier ``enable()``
    gave them the own one (the module is not imported for this)."""
    own_blas_library.choose_none()
    gemm = sys.modules.get(f"{__package__}.kernels.compiled.gemm")
    if gemm is not None:
        gemm.use(None)


on_enable(_start, _stop)


# ----- which products go where -------------------------------------------------------------------


def _floats(a, b) -> bool:
    """Whether a and b are NumPy arrays of one float dtype (float16/32/64: ml_dtypes' and CuPy
    arrays stay whole, on NumPy's or CuPy's own call)."""
    return (
        a.dtype == b.dtype
        and a.dtype.kind == "f"
        and isinstance(a, np.ndarray)
        and isinstance(b, np.ndarray)
    )


def _splits(a, b, length: int, multiply_adds: int) -> bool:
    """Whether a product of ``multiply_adds``, cut along an output axis ``length`` long, is cut
    across threads."""
    if multiply_adds < SPLIT_MULTIPLY_ADDS:  # the commonest answer, and the cheapest test
        return False
    count = gemm_threads()
    return count > 1 and length >= 2 * count and _floats(a, b)


def _on_own_blas(entry_work: int, a, b) -> bool:
    """Whether a product whose matrices each take ``entry_work`` multiply-adds goes to the own
    BLAS even uncut: every product NumPy's BLAS would thread, so that its threads never wake."""
    return own_blas() and entry_work > BLAS_THREADED_MULTIPLY_ADDS and _floats(a, b)


def _own_blas_takes(work: int, a, b) -> bool:
    """Whether ``_dot`` gives a product of ``work`` multiply-adds to the own BLAS (whole, or cut
    on numba's threads): one ``_on_own_blas`` takes, except a product too small to cut while
    NumPy's BLAS has one thread (``_numpy_blas_alone``) and the own BLAS is a copy of it. MKL
    takes those too: its call, ours included, beats NumPy's OpenBLAS on them
    (``benchmarks.products``' LSTMCell cases)."""
    return _on_own_blas(work, a, b) and (
        work >= SPLIT_MULTIPLY_ADDS or _own_blas_is_mkl() or not _numpy_blas_alone()
    )


def _own_blas_is_mkl() -> bool:
    """Whether the own BLAS loaded now is MKL (``blas.mkl``)."""
    library = own_blas_library.library()
    return library is not None and library.name == "mkl"


def _numpy_blas_alone() -> bool:
    """Whether NumPy's BLAS has one thread now (threadpoolctl's limits): it has no threads to
    wake, and a small product costs less there (``a.dot``) than through the own copy's call
    (layout checks and numba's dispatch, about 3.5 us). Products too large to matter for that
    stay on the own copy."""
    return own_blas_library.numpy_blas_threads() == 1


def _whole_on_own_blas(a, b, out, accumulate: bool = False, bias=None):
    """``a.dot(b)`` (into ``out`` if given; added to it with ``accumulate``, or to a ``bias``
    row it is filled with first, ``gemm.whole_product``'s) as one call of the
    own BLAS on the calling thread, for 2-D float arrays of one dtype (plain NumPy arrays: numba
    types no subclass here), each row-major or the transpose of a row-major one: the commonest
    uncut product in one pool, ``compiled.split_product(..., cut=False)``'s call with its
    layout checks compiled (``gemm.whole_product``). None, having done nothing, where it does
    not apply."""
    found = _whole["calls"].get(a.dtype)  # (its callers ask _on_own_blas: one float dtype)
    if found is None or type(a) is not np.ndarray or type(b) is not np.ndarray:
        return None
    if out is None:
        out = np.empty((a.shape[0], b.shape[1]), a.dtype)
    elif out.dtype != a.dtype:
        return None
    if bias is not None and (type(bias) is not np.ndarray or bias.dtype != a.dtype):
        return None
    address, one, zero, slice_depth = found
    own_blas_library.hold_at_one_thread()
    try:
        beta = one if accumulate else zero
        done = _whole["call"](address, a, b, out, one, beta, slice_depth, bias)
    except Exception:  # a compile or cache failure: compiled.split_product's path says so
        _whole["calls"] = {}
        return None
    return out if done else None


def _compiled_product(
    a, b, out, work: int, by_columns: bool, cut: bool, own: bool, accumulate=False, bias=None
) -> bool:
    """``compiled.split_product`` cut when asked (else uncut on the own BLAS, when ``own``);
    True when it ran."""
    options = {"accumulate": accumulate, "bias": bias}
    if cut and compiled.split_product(a, b, out, work, by_columns, **options):
        return True
    return own and compiled.split_product(a, b, out, work, by_columns, cut=False, **options)


def _matrix_vector(a, b, out, work: int):
    """``a.dot(b)`` in one pool where a has one row or b one column: one GEMV (a one-row GEMM
    is several times slower), on the own BLAS for a large matrix, cut by the matrix's rows
    across numba's threads where they are free, else on NumPy's, noting the call where that
    BLAS may thread it."""
    if own_blas() and work >= OWN_GEMV_ELEMENTS and _floats(a, b):
        result = np.empty((a.shape[0], b.shape[1]), a.dtype) if out is None else out
        if compiled.matrix_vector(a, b, result, cut=True):
            return result
    if own_blas() and work > BLAS_THREADED_MULTIPLY_ADDS:
        blas_called()
    return a.dot(b) if out is None else np.dot(a, b, out=out)


def _dot(a, b, out=None, accumulate: bool = False):
    """``a.dot(b)`` for 2-D NumPy arrays (into ``out`` if given): one BLAS call, or in one pool
    one single-threaded BLAS call per range of output rows, or of output columns where ``b`` is
    the larger operand, on BuildingAI's threads: numba's (``compiled.split_product``) where it
    runs, else the Python pool. With ``accumulate``, ``out`` holds values the product is added
    to (a layer's bias, as PyTorch's addmm): in the BLAS call itself (its beta) where the
    product runs on the own BLAS, else by one addition after it."""
    if not one_pool():  # NumPy's BLAS threads the product itself
        blas_called()
        return _numpy_dot(a, b, out, accumulate)
    (rows, inner), columns = a.shape, b.shape[1]
    work = rows * inner * columns
    if rows == 1 or columns == 1:
        if accumulate:
            out += _matrix_vector(a, b, None, work)
            return out
        return _matrix_vector(a, b, out, work)
    if work < SPLIT_MULTIPLY_ADDS:  # never cut: the commonest product, its tests first
        if _own_blas_takes(work, a, b):
            result = _whole_on_own_blas(a, b, out, accumulate)
            if result is not None:
                return result
            blas_called()  # (a layout the own BLAS does not take: NumPy's threads it)
        return _numpy_dot(a, b, out, accumulate)
    by_columns = b.size > a.size
    cut = _splits(a, b, columns if by_columns else rows, work)
    own = _on_own_blas(work, a, b)
    if not (cut or own):
        return _numpy_dot(a, b, out, accumulate)
    if own and not cut:
        result = _whole_on_own_blas(a, b, out, accumulate)
        if result is not None:
            return result
    if out is None:
        out = np.empty((rows, columns), a.dtype)
    if _compiled_product(a[None], b[None], out[None], work, by_columns, cut, own, accumulate):
        return out
    if own_blas() or not cut or work < PYTHON_SPLIT_MULTIPLY_ADDS:
        if work > BLAS_THREADED_MULTIPLY_ADDS:  # (NumPy's BLAS threads it where not held)
            blas_called()
        return _numpy_dot(a, b, out, accumulate)

    def row_range(start: int, stop: int) -> None:
        if accumulate:
            out[start:stop] += a[start:stop].dot(b)
        else:
            np.dot(a[start:stop], b, out=out[start:stop])

    def column_range(start: int, stop: int) -> None:
        if accumulate:
            out[:, start:stop] += a.dot(b[:, start:stop])
        else:
            out[:, start:stop] = a.dot(b[:, start:stop])

    if by_columns:
        parallel_for(column_range, columns, work=work)
    else:
        parallel_for(row_range, rows, work=work)
    return out


def _dot_from_bias(a, b, out, bias):
    """out = a.dot(b) + ``bias`` (a row) for a product ``_bias_in_the_product`` gives the own
    BLAS: whole, or cut on numba's threads, each call filling its block of ``out`` with the bias
    just before it adds its product into it. None, having done nothing, where it does not run."""
    (rows, inner), columns = a.shape, b.shape[1]
    work = rows * inner * columns
    by_columns = b.size > a.size
    cut = work >= SPLIT_MULTIPLY_ADDS and _splits(a, b, columns if by_columns else rows, work)
    if not cut:
        return _whole_on_own_blas(a, b, out, bias=bias)
    if _compiled_product(a[None], b[None], out[None], work, by_columns, True, True, bias=bias):
        return out
    return None


def _numpy_dot(a, b, out, accumulate: bool):
    """``a.dot(b)`` on NumPy's BLAS, into ``out`` if given, added to it with ``accumulate``."""
    if accumulate:
        out += a.dot(b)
        return out
    return a.dot(b) if out is None else np.dot(a, b, out=out)


def _split_matmul(a, b):
    """``np.matmul`` of two stacks with the same batch shape in one pool: cut across
    BuildingAI's threads by batch entries, or by rows when there are fewer entries than
    threads; or uncut on the own BLAS. None where it does not apply."""
    if not one_pool() or a.ndim < 3 or a.shape[:-2] != b.shape[:-2]:
        return None
    rows, inner, columns = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = math.prod(a.shape[:-2])
    work = batch * rows * inner * columns
    if rows == 1 or columns == 1:  # matrix-vector products: NumPy's, faster than GEMMs
        return None
    cut = _splits(a, b, batch * rows, work)
    own = _on_own_blas(rows * inner * columns, a, b)
    if not (cut or own):
        return None
    out = np.empty(a.shape[:-1] + (columns,), a.dtype)
    if _compiled_product(*map(_one_or_two_batch_axes, (a, b, out)), work, False, cut, own):
        return out
    stacks = a.reshape(batch, rows, inner), b.reshape(batch, inner, columns)
    results = out.reshape(batch, rows, columns)
    if own_blas() or not cut or work < PYTHON_SPLIT_MULTIPLY_ADDS:
        # one GEMM per entry on NumPy's BLAS, which threads only entries above the threshold:
        # noting smaller ones would keep the element-wise kernels on one thread for nothing
        if rows * inner * columns > BLAS_THREADED_MULTIPLY_ADDS:
            blas_called()
        np.matmul(*stacks, out=results)
        return out
    if batch < 2 * gemm_threads():
        for index in range(batch):
            _dot(stacks[0][index], stacks[1][index], out=results[index])
        return out

    def entries(start: int, stop: int) -> None:
        np.matmul(stacks[0][start:stop], stacks[1][start:stop], out=results[start:stop])

    parallel_for(entries, batch, work=work)
    return out


def _one_or_two_batch_axes(stack):
    """``stack`` (..., rows, columns) with one or two batch axes, as the compiled product reads
    them: as it is where it has one or two (a model's (batch, heads, ...) views of its
    projections, which one batch axis would copy), else its batch axes folded into one."""
    if stack.ndim <= 4:
        return stack
    return stack.reshape(-1, *stack.shape[-2:])


def _stacked(xp, a, b):
    """``xp.matmul(a, b)`` of stacks: cut or on the own BLAS in one pool where it applies."""
    out = _split_matmul(a, b) if xp is np else None
    if out is not None:
        return out
    if not own_blas() or a.shape[-2] * a.shape[-1] * b.shape[-1] > BLAS_THREADED_MULTIPLY_ADDS:
        blas_called()  # (on the own BLAS, small products leave NumPy's threads asleep)
    return xp.matmul(a, b)


def multiply(xp, a, b):
    """``linalg.multiply`` routed: ``a @ b`` with a batch against one matrix folded into one
    product of its rows, each product on BuildingAI's threads or its own BLAS where one pool
    takes it, else on NumPy's BLAS with the call noted."""
    if b.ndim == 2:
        if a.ndim == 2:
            return _dot(a, b)
        if a.ndim > 2:
            rows = a.reshape(math.prod(a.shape[:-1]), a.shape[-1])
            return _dot(rows, b).reshape(*a.shape[:-1], b.shape[1])
    return _stacked(xp, a, b)


def matmul_array(xp, a, b):
    """``linalg.matmul_array`` with its products routed (``multiply``)."""
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError("matmul operands need rank >= 2")
    return in_math_precision(multiply, xp, a, b)


def einsum_array(xp, equation: str, *arrays, optimize=False):
    """``linalg.einsum_array``, noting that a planned contraction hands its pairs of operands
    to NumPy's BLAS."""
    if optimize:
        blas_called()
    return linalg.einsum_array(xp, equation, *arrays, optimize=optimize)


# ----- the registered kernels --------------------------------------------------------------------


def _routed(xp, *arrays, **attrs) -> bool:
    """Whether a product is routed: NumPy arrays, in one pool or beside element-wise threads
    that must know when NumPy's BLAS threads were woken."""
    return xp is np and (one_pool() or threads.get_num_threads() > 1)


def _routed_product(xp, a, b, transpose_a=False, transpose_b=False) -> bool:
    """``_routed`` for a product large enough for routing to change anything: a smaller one is
    never cut, stays off the own BLAS and leaves NumPy's BLAS threads asleep. (The size comes
    first: most products of a small model stop there, and this test runs on every one.)"""
    if b.ndim < 2 or a.size * b.shape[-2 if transpose_b else -1] <= BLAS_THREADED_MULTIPLY_ADDS:
        return False
    return a.ndim >= 2 and _routed(xp)


def _routed_layer(xp, x, weight, bias=None) -> bool:
    """``_routed_product`` for a linear layer: ``x`` (..., in) times ``weight`` (out, in)."""
    return _layer_multiply_adds(x, weight) > BLAS_THREADED_MULTIPLY_ADDS and _routed(xp)


def _layer_multiply_adds(x, weight, bias=None) -> int:
    """A linear layer's multiply-adds, the size of its calls (``registry.register``'s
    ``size``): x (..., in) times weight (out, in) makes x.size * out."""
    return x.size * weight.shape[0]


def routed_matmul(ctx, xp, a, b, *, transpose_a=False, transpose_b=False):
    """``MatMul.forward`` with its product routed."""
    if transpose_a:
        a = a.swapaxes(-1, -2)
    if transpose_b:
        b = b.swapaxes(-1, -2)
    if a.ndim == 2 and b.ndim == 2 and gemm_result_dtype(a, b) is None:  # the commonest call
        return _dot(a, b)
    if a.ndim < 2 or b.ndim < 2:
        return NotImplemented  # the record explains the failure
    return in_math_precision(multiply, xp, a, b)


def routed_linear(ctx, xp, x, weight, bias=None):
    """``Linear.forward`` with its product routed. Where the product runs on the own BLAS, it
    starts from the bias, as PyTorch's addmm does: each thread fills its block of the output
    with the bias rows and the BLAS adds the product to them (its beta), with no pass over the
    output after it."""
    if bias is not None and _bias_in_the_product(xp, x, weight, bias):
        rows = x.reshape(-1, x.shape[-1])
        out = np.empty((rows.shape[0], weight.shape[0]), x.dtype)
        if _dot_from_bias(rows, weight.T, out, bias) is None:
            out[...] = bias
            _dot(rows, weight.T, out, accumulate=True)
        return out.reshape(*x.shape[:-1], weight.shape[0])
    return linear_array(xp, x, weight, bias, product=multiply)


def routed_linear_relu(ctx, xp, x, weight, bias=None):
    """``LinearRelu.forward`` with the product as ``linear.routed`` computes it, then the ReLU
    in place on it (a new array no one else holds), split across threads where it is large."""
    out = routed_linear(ctx, xp, x, weight, bias)
    elementwise(xp, relu, (out,), (out,))
    return out


def _bias_in_the_product(xp, x, weight, bias) -> bool:
    """Whether ``routed_linear`` starts the product from the bias: float32 or float64 NumPy
    arrays of one dtype in the math precision as stored, a bias of one row, and a product of
    several rows and columns that ``_dot`` gives the own BLAS (``_own_blas_takes``). Elsewhere
    the bias is added after the product: filling the output first would cost a pass more."""
    if xp is not np or x.ndim < 2 or bias.ndim != 1 or not x.shape[-1]:
        return False
    dtype = x.dtype
    if dtype.type not in (np.float32, np.float64) or not dtype == weight.dtype == bias.dtype:
        return False
    if gemm_result_dtype(x, weight) is not None:  # operands rounded to a lower precision first
        return False
    rows, columns = x.size // x.shape[-1], weight.shape[0]
    work = rows * x.shape[-1] * columns
    return rows > 1 and columns > 1 and _own_blas_takes(work, x, weight)


def noted_einsum(ctx, xp, *arrays, equation):
    """``Einsum.forward``, noting the calls a planned contraction makes to NumPy's BLAS."""
    return einsum_array(xp, equation, *arrays, optimize=worth_a_path(equation, arrays))


register(
    MATMUL,
    _routed_product,
    routed_matmul,
    name="matmul.routed",
    min_size=ROUTED_MIN_SIZE,
    description="products cut across one pool's threads or run on the own BLAS copy; "
    "outside one pool, NumPy's BLAS calls noted for the element-wise threads",
)
register(
    LINEAR,
    _routed_layer,
    routed_linear,
    name="linear.routed",
    min_size=ROUTED_MIN_SIZE,
    size=_layer_multiply_adds,
    description="the layer's product routed as matmul.routed",
)
register(
    LINEAR_RELU,
    _routed_layer,
    routed_linear_relu,
    name="linear_relu.routed",
    min_size=ROUTED_MIN_SIZE,
    size=_layer_multiply_adds,
    description="linear.routed's product, then the ReLU in place on it across threads",
)
register(
    EINSUM,
    _routed,
    noted_einsum,
    name="einsum.noted",
    description="planned contractions noted as NumPy BLAS calls for the element-wise threads",
)
