"""Faster kernels of the row ops: softmax, log_softmax and their gradients, standardize, layer
normalisation and its gradients, cross-entropy and its gradient, and the joined gradient of
nll_loss through log_softmax (the records of ``ops/nn.py``, ``ops/norm.py``,
``ops/layer_norm.py``, ``ops/loss.py`` and ``ops/log_softmax_nll.py``).

Each applies where the op's axes are the trailing axes of C-contiguous arrays, seen as
(rows, n) views: the rows are cut across BuildingAI's threads (``kernels/split.py``), each part
a few NumPy passes that sum rows with einsum (``kernels/row_reduce.py``). The row kernels below
name compiled twins (``kernels/compiled/rows.py``: one pass over each row in cache, on numba's
threads), which take float32 rows on the CPU; float32 CuPy rows take the fused CUDA plans of
``kernels/compiled/cuda_rows.py``. Where the layout does not fit, a kernel returns
``NotImplemented`` and the record's forward runs.
"""

from __future__ import annotations

import functools

import numpy as np

from ..ops.layer_norm import LAYER_NORM, LAYER_NORM_INPUT_GRAD, LAYER_NORM_WEIGHT_GRAD
from ..ops.log_softmax_nll import LOG_SOFTMAX_NLL_GRAD
from ..ops.loss import CROSS_ENTROPY, CROSS_ENTROPY_GRAD
from ..ops.nn import LOG_SOFTMAX, LOG_SOFTMAX_GRAD, SOFTMAX, SOFTMAX_GRAD
from ..ops.norm import STANDARDIZE, STANDARDIZE_GRAD
from ..ops.reduce import kept_shape
from .kernels import compiled
from .kernels.compiled import ANY_SIZE, compiled_twin
from .kernels.row_reduce import column_dot_into, row_dot, row_sum
from .kernels.split import split_rows, trailing_rows
from .registry import register

_FLOAT32 = np.dtype(np.float32)

# ----- row kernels: (rows, n) arrays, each with its compiled twin ---------------------------------


@compiled_twin("rows.softmax_rows", min_work=ANY_SIZE)
def _softmax_kernel(xp, x, out):
    """Softmax of the rows of x (rows, n) into out, each row shifted by its own maximum."""
    xp.subtract(x, x.max(axis=1, keepdims=True), out=out)
    xp.exp(out, out=out)
    out /= row_sum(xp, out)


@compiled_twin("rows.softmax_rows_shifted", params=("shift",), min_work=ANY_SIZE)
def _softmax_rows_shifted(xp, x, out, *, shift):
    """Softmax of the rows of x (rows, n) shifted by ``shift``, the maximum of the whole input,
    instead of each row's own: a contiguous subtraction of a scalar instead of a per-row maximum
    and a broadcast one.

    exp(x - shift) keeps its full relative precision while it stays a normal number, and a
    row's sum is at least its largest term, so a sum at or above tiny / eps means every term
    that can matter to that row was computed exactly. Rows below that (far under the input's
    maximum), or with inf or nan, are computed with their own maximum. Each row's result
    depends on the shift and its own values only, so it does not change with how rows are
    split across threads.
    """
    if not np.isfinite(shift):  # an inf or nan somewhere: every row with its own maximum
        with np.errstate(invalid="ignore"):  # inf - inf: the row is nan, as in PyTorch
            _softmax_kernel(xp, x, out)
        return
    xp.subtract(x, shift, out=out)
    xp.exp(out, out=out)
    sums = row_sum(xp, out)
    redo = ~(sums[:, 0] >= _SHARED_SHIFT_FLOOR[x.dtype])
    if redo.any():
        again = x[redo]
        with np.errstate(invalid="ignore"):  # -inf - (-inf) in fully masked rows: nan
            _softmax_kernel(xp, again, again)
        out[redo] = again
        sums[redo] = 1
    out /= sums


# the smallest row sum for which a shared shift loses no precision: tiny / eps of the dtype
_SHARED_SHIFT_FLOOR = {
    np.dtype(kind): np.finfo(kind).tiny / np.finfo(kind).eps for kind in ("float32", "float64")
}


@compiled_twin("rows.softmax_grad_rows", min_work=ANY_SIZE)
def _softmax_grad_kernel(xp, grad, out, result):
    """``out * (grad - sum(grad * out))`` per row into result."""
    xp.subtract(grad, row_dot(xp, grad, out), out=result)
    result *= out


@compiled_twin("rows.log_softmax_rows", min_work=ANY_SIZE)
def _log_softmax_kernel(xp, x, out):
    """log_softmax of the rows of x (rows, n) into out: x - max - log(sum(exp(x - max)))."""
    xp.subtract(x, x.max(axis=1, keepdims=True), out=out)
    # the largest term is exp(0) = 1: the sum is >= 1 and its log finite (nan rows stay nan)
    with np.errstate(invalid="ignore"):  # -inf - (-inf) in rows of -inf only: nan
        out -= xp.log(row_sum(xp, xp.exp(out)))


@compiled_twin("rows.log_softmax_grad_rows", min_work=ANY_SIZE)
def _log_softmax_grad_kernel(xp, grad, out, result):
    """``grad - exp(out) * sum(grad)`` per row into result."""
    total = row_sum(xp, grad)
    xp.exp(out, out=result)
    result *= total
    xp.subtract(grad, result, out=result)


@compiled_twin("rows.standardize_rows", params=("eps",), min_work=ANY_SIZE)
def _standardize_rows(xp, x, out, rstd, *, eps):
    """Standardize each row of x (rows, features) into out; rstd (rows, 1) receives
    1 / sqrt(var + eps)."""
    scale = x.dtype.type(1 / x.shape[1])
    xp.subtract(x, row_sum(xp, x) * scale, out=out)
    variance = row_dot(xp, out, out) * scale
    variance += x.dtype.type(eps)
    xp.sqrt(variance, out=variance)
    xp.reciprocal(variance, out=rstd)
    out *= rstd


@compiled_twin("rows.standardize_grad_rows", min_work=ANY_SIZE)
def _standardize_grad_rows(xp, g, xhat, rstd, out):
    """``rstd * (g - mean(g) - xhat * mean(g * xhat))`` per row of (rows, features) arrays."""
    scale = g.dtype.type(1 / g.shape[1])
    projection = row_dot(xp, g, xhat) * scale
    xp.subtract(g, row_sum(xp, g) * scale, out=out)
    out -= xhat * projection
    out *= rstd


@compiled_twin("rows.layer_norm_rows", params=("weight", "bias", "eps"), min_work=ANY_SIZE)
def _layer_norm_rows(xp, x, xhat, out, rstd, *, weight, bias, eps) -> None:
    """Rows of x (rows, n) standardized into xhat (rstd (rows, 1): 1 / sqrt(var + eps)), and
    ``xhat * weight + bias`` into out; weight and bias (or None) are (n,)."""
    _standardize_rows(xp, x, xhat, rstd, eps=eps)
    xp.multiply(xhat, weight, out=out)
    if bias is not None:
        out += bias


@compiled_twin("rows.layer_norm_input_grad_rows", params=("weight",), min_work=ANY_SIZE)
def _layer_norm_input_grad_rows(xp, grad, xhat, rstd, out, *, weight) -> None:
    """The standardize gradient of ``grad * weight`` for rows (rows, n), weight (n,), into out."""
    xp.multiply(grad, weight, out=out)
    _standardize_grad_rows(xp, out, xhat, rstd, out)


def _in_place_standardize_grad(xp, grad_xhat, xhat, rstd) -> None:
    """The standardize gradient of rows of ``grad_xhat``, written over it."""
    _standardize_grad_rows(xp, grad_xhat, xhat, rstd, grad_xhat)


@compiled_twin("rows.column_dot_and_sum")
def _column_dot_and_sum(xp, a, b, out) -> None:
    """out (2, n) = the sums of a * b and of a (rows, n) over their rows."""
    np.einsum("ij,ij->j", a, b, out=out[0])
    np.sum(a, axis=0, out=out[1])


@compiled_twin("rows.cross_entropy_rows", min_work=ANY_SIZE)
def _cross_entropy_rows(xp, x, probs, peak, log_total) -> None:
    """For rows of logits x (rows, C): probs = softmax(x), and per row (rows, 1) the maximum
    ``peak`` and ``log_total = log(sum(exp(x - peak)))``, so log_softmax(x) = x - peak -
    log_total."""
    xp.max(x, axis=1, keepdims=True, out=peak)
    xp.subtract(x, peak, out=probs)
    xp.exp(probs, out=probs)
    total = row_sum(xp, probs)
    probs /= total
    xp.log(total, out=log_total)


@compiled_twin("rows.cross_entropy_targets", params=("ignore_index",), min_work=ANY_SIZE)
def _cross_entropy_targets(xp, x, target, probs, losses, total, skipped, *, ignore_index):
    """For logits x (rows, C) and class indices target (rows,): probs = softmax(x), losses
    (rows,) = -log_softmax(x) at each row's target (-0.0 where the target is ``ignore_index`` or
    not a class), total (1,) their sum, and skipped (2,) the number of rows whose target is
    ``ignore_index`` and of those whose target is not a class."""
    peak, log_total = xp.empty((len(x), 1), x.dtype), xp.empty((len(x), 1), x.dtype)
    _cross_entropy_rows(xp, x, probs, peak, log_total)
    ignored = target == ignore_index
    counted = ~ignored & (target >= 0) & (target < x.shape[1])
    picked = _at_targets(xp, x, xp.where(counted, target, 0)[:, None], 1) - peak - log_total
    losses[...] = xp.where(counted, -picked[:, 0], np.float32(-0.0))
    total[0] = losses.sum(dtype=np.float64)
    skipped[0] = xp.count_nonzero(ignored)
    skipped[1] = ignored.size - skipped[0] - xp.count_nonzero(counted)


@compiled_twin("rows.softmax_minus_one_hot", min_work=ANY_SIZE)
def _softmax_minus_one_hot(xp, probs, coefficients, index, out) -> None:
    """out = probs * coefficients per row (probs (rows, C), coefficients (rows,)), minus each
    row's coefficient at its column ``index`` (rows, 1): the gradient of cross-entropy."""
    xp.multiply(probs, coefficients[:, None], out=out)
    out[_row_numbers(xp, len(out)), index[:, 0]] -= coefficients


@compiled_twin("rows.exp_minus_one_hot", min_work=ANY_SIZE)
def _exp_minus_one_hot(xp, log_probs, coefficients, index, out) -> None:
    """out = -(exp(log_probs) * coefficients) per row (log_probs (rows, C), coefficients
    (rows,)), plus each row's coefficient at its column ``index`` (rows, 1): the gradient of
    nll_loss through log_softmax, as ``log_softmax_grad`` computes it from ``nll_loss_grad``'s
    scattered coefficients."""
    xp.exp(log_probs, out=out)
    out *= coefficients[:, None]
    xp.negative(out, out=out)
    out[_row_numbers(xp, len(out)), index[:, 0]] += coefficients


@compiled_twin("rows.scale_rows")
def _scale_rows(xp, a, coefficient, out) -> None:
    """out = a * coefficient for rows a (rows, n) and coefficient (rows, 1)."""
    xp.multiply(a, coefficient, out=out)


# ----- softmax and log_softmax --------------------------------------------------------------------


def _nonempty(xp, x, *arrays, **attrs) -> bool:
    return x.size > 0


def softmax(ctx, xp, x, *, axis):
    """Rows along the last axis cut across threads; NumPy rows of float32/float64 without a
    compiled twin share one shift (the input's maximum), which saves a per-row maximum."""
    out = xp.empty_like(x)
    rows = trailing_rows((axis,), x, out)
    if rows is None:
        return NotImplemented
    if xp is np and x.dtype in _SHARED_SHIFT_FLOOR:
        if not compiled.run(_softmax_kernel, rows):  # the twin, else the shared shift
            split_rows(xp, functools.partial(_softmax_rows_shifted, shift=x.max()), *rows)
    else:
        split_rows(xp, _softmax_kernel, *rows)
    return out


def log_softmax(ctx, xp, x, *, axis):
    """float32 rows along the last axis, cut across threads."""
    out = xp.empty_like(x)
    rows = trailing_rows((axis,), x, out)
    if rows is None:
        return NotImplemented
    split_rows(xp, _log_softmax_kernel, *rows)
    return out


def _row_gradient(xp, kernel, grad, out, axis):
    """(g, out) -> an array of out's shape made by ``kernel`` row by row along ``axis``, rows
    cut across threads; NotImplemented where they are not trailing contiguous rows."""
    if grad.shape != out.shape:
        return NotImplemented  # a broadcast gradient has no rows of its own
    result = xp.empty(out.shape, xp.result_type(grad, out))
    rows = trailing_rows((axis,), grad, out, result)
    if rows is None:
        return NotImplemented
    split_rows(xp, kernel, *rows)
    return result


def softmax_grad(ctx, xp, grad, out, *, axis):
    return _row_gradient(xp, _softmax_grad_kernel, grad, out, axis)


def log_softmax_grad(ctx, xp, grad, out, *, axis):
    return _row_gradient(xp, _log_softmax_grad_kernel, grad, out, axis)


register(
    SOFTMAX,
    _nonempty,
    softmax,
    name="softmax.rows",
    description="rows of the last axis cut across threads (compiled twin for float32)",
)
register(
    SOFTMAX_GRAD,
    _nonempty,
    softmax_grad,
    name="softmax_grad.rows",
    description="rows of the last axis cut across threads (compiled twin for float32)",
)
register(
    LOG_SOFTMAX,
    lambda xp, x, **attrs: x.dtype == np.float32 and x.size > 0,
    log_softmax,
    name="log_softmax.rows",
    description="float32 rows of the last axis cut across threads (compiled twin)",
)
register(
    LOG_SOFTMAX_GRAD,
    _nonempty,
    log_softmax_grad,
    name="log_softmax_grad.rows",
    description="rows of the last axis cut across threads (compiled twin for float32)",
)

# ----- standardize and layer normalisation --------------------------------------------------------


def _standardize_applies(xp, x, *arrays, **attrs) -> bool:
    return x.size > 0 and x.dtype.itemsize >= 4  # narrower inputs are normalised in float32


def standardize(ctx, xp, x, *, axes, eps):
    """Trailing axes (layer norm): rows cut across threads."""
    out = xp.empty_like(x)
    rstd = xp.empty(kept_shape(x.shape, axes), dtype=x.dtype)
    rows = trailing_rows(axes, x, out, rstd)
    if rows is None:
        return NotImplemented
    split_rows(xp, functools.partial(_standardize_rows, eps=eps), *rows)
    ctx.rstd = rstd
    return out


def standardize_grad(ctx, xp, g, x, xhat, rstd, *, axes, eps):
    """Trailing axes of one dtype: rows cut across threads."""
    if not (g.dtype == xhat.dtype == rstd.dtype == x.dtype and g.shape == xhat.shape):
        return NotImplemented
    out = xp.empty_like(g)
    rows = trailing_rows(axes, g, xhat, rstd, out)
    if rows is None:
        return NotImplemented
    split_rows(xp, _standardize_grad_rows, *rows)
    return out


register(
    STANDARDIZE,
    _standardize_applies,
    standardize,
    name="standardize.rows",
    description="trailing axes: rows cut across threads (compiled twin for float32)",
)
register(
    STANDARDIZE_GRAD,
    _standardize_applies,
    standardize_grad,
    name="standardize_grad.rows",
    description="trailing axes: rows cut across threads (compiled twin for float32)",
)


def _float32_rows(x, weight, bias, normalized) -> bool:
    """Whether x, weight and bias (or None) are float32 arrays of one kind (NumPy, or CuPy for
    the CUDA twins), weight and bias contiguous and of the ``normalized`` shape: the layout of
    the fused row kernels."""
    kind = type(x)
    for array in (x, weight) if bias is None else (x, weight, bias):
        # a loop, not all(): generators cost more than the test on a small call
        if type(array) is not kind or array.dtype != _FLOAT32 or not array.flags.c_contiguous:
            return False
    normalized = tuple(normalized)
    return tuple(weight.shape) == normalized and (bias is None or tuple(bias.shape) == normalized)


def layer_norm(ctx, xp, x, weight, bias=None, *, axes, eps):
    """float32 rows: the standardize and the affine map in one pass over each row; other
    dtypes: the standardize kernel, then the affine map."""
    normalized = x.shape[x.ndim - len(axes) :]
    if _float32_rows(x, weight, bias, normalized):
        xhat, out = xp.empty_like(x), xp.empty_like(x)
        rstd = xp.empty(x.shape[: x.ndim - len(axes)] + (1,) * len(axes), np.float32)
        rows = trailing_rows(axes, x, xhat, out, rstd)
        if rows is not None:
            kernel = functools.partial(
                _layer_norm_rows,
                weight=weight.reshape(-1),
                bias=None if bias is None else bias.reshape(-1),
                eps=eps,
            )
            split_rows(xp, kernel, *rows)
            ctx.xhat, ctx.rstd = xhat, rstd
            return out
    if not _standardize_applies(xp, x):
        return NotImplemented
    xhat = standardize(ctx, xp, x, axes=axes, eps=eps)  # sets ctx.rstd
    if xhat is NotImplemented:
        return NotImplemented
    ctx.xhat = xhat
    out = xp.multiply(xhat, weight)
    if bias is not None:
        out += bias
    return out


def layer_norm_input_grad(ctx, xp, grad, x, weight, xhat, rstd, *, axes, eps):
    """One dtype, trailing rows: the product with the weight and the standardize gradient in
    one pass over each row (float32), or in one buffer with rows cut across threads."""
    if not (grad.dtype == xhat.dtype == rstd.dtype == weight.dtype and grad.shape == xhat.shape):
        return NotImplemented
    if not grad.flags.c_contiguous:
        grad = xp.ascontiguousarray(grad)  # e.g. the broadcast gradient of a mean
    if _float32_rows(grad, weight, None, grad.shape[grad.ndim - len(axes) :]):
        out = xp.empty_like(grad)
        rows = trailing_rows(axes, grad, xhat, rstd, out)
        if rows is not None:
            kernel = functools.partial(_layer_norm_input_grad_rows, weight=weight.reshape(-1))
            split_rows(xp, kernel, *rows)
            return out
    rows = trailing_rows(axes, grad, xhat, rstd)
    if rows is None:
        return NotImplemented
    grad_rows, xhat_rows, rstd_rows = rows
    grad_xhat = xp.multiply(grad_rows, weight.reshape(-1))
    split_rows(xp, _in_place_standardize_grad, grad_xhat, xhat_rows, rstd_rows)
    return grad_xhat.reshape(xhat.shape)


def layer_norm_weight_grad(ctx, xp, grad, x, xhat, rstd, *, axes, eps, with_bias=False):
    """NumPy float32/float64 trailing rows: column dot products of grad and xhat (and with
    ``with_bias`` the column sums of grad, in the same pass over each block of rows), with no
    (rows, features) product temporary (NumPy's einsum rejects bfloat16)."""
    if not (grad.dtype == xhat.dtype and grad.dtype.kind == "f" and grad.shape == xhat.shape):
        return NotImplemented
    if not grad.flags.c_contiguous:
        grad = np.ascontiguousarray(grad)
    rows = trailing_rows(axes, grad, xhat)
    if rows is None:
        return NotImplemented
    normalized = xhat.shape[xhat.ndim - len(axes) :]
    if with_bias:
        out = np.empty((2, rows[0].shape[1]), grad.dtype)
        compiled.call(np, _column_dot_and_sum, [*rows, out])
        return out.reshape((2, *normalized))
    out = np.empty(rows[0].shape[1], grad.dtype)
    compiled.call(np, column_dot_into, [*rows, out])
    return out.reshape(normalized)


register(
    LAYER_NORM,
    lambda xp, x, *params, **attrs: x.size > 0,
    layer_norm,
    name="layer_norm.rows",
    description="float32 rows standardized and scaled in one pass (compiled twin); "
    "other dtypes through standardize.rows",
)
register(
    LAYER_NORM_INPUT_GRAD,
    lambda xp, grad, *arrays, **attrs: grad.size > 0,
    layer_norm_input_grad,
    name="layer_norm_input_grad.rows",
    description="the weight product and the standardize gradient in one pass over each row",
)
register(
    LAYER_NORM_WEIGHT_GRAD,
    lambda xp, grad, *arrays, **attrs: xp is np,
    layer_norm_weight_grad,
    name="layer_norm_weight_grad.columns",
    description="column dot products of grad and xhat (and column sums of grad), no product "
    "temporary",
)

# ----- cross-entropy ------------------------------------------------------------------------------


def cross_entropy(ctx, xp, x, target, weight=None, *, axis, ignore_index, reduction):
    """float32 classes along the last axis: the softmax and each row's maximum and log-sum in
    one pass over each row; when every sample counts once, the mean or sum without masks."""
    if weight is None and xp is np and x.ndim == 2:
        done = _in_one_call(ctx, x, target, ignore_index, reduction)
        if done is not None:
            return done
    probs = xp.empty_like(x)
    shape = x.shape[:-1] + (1,)
    peak, log_total = xp.empty(shape, x.dtype), xp.empty(shape, x.dtype)
    rows = trailing_rows((axis,), x, probs, peak, log_total)
    if rows is None:
        return NotImplemented
    split_rows(xp, _cross_entropy_rows, *rows)
    valid = target != ignore_index
    all_valid = bool(valid.all())
    # (the classes' axis is the last one: the index is the target with a unit axis after it)
    index = (target if all_valid else xp.where(valid, target, 0))[..., None]
    log_probs = _at_targets(xp, x, index, axis) - peak - log_total
    if weight is not None or not all_valid:
        return CROSS_ENTROPY.weighted_losses(
            ctx, xp, log_probs, probs, index, valid, weight, axis=axis, reduction=reduction
        )
    count = target.size  # every sample counts once: no weights or masks to apply
    losses = -log_probs.squeeze(axis)
    if reduction == "none":
        out, share = losses, 1.0
    elif reduction == "sum":
        out, share = losses.sum(), 1.0
    elif count:
        out, share = losses.sum() / x.dtype.type(count), 1.0 / count
    else:  # the mean of nothing
        out, share = x.dtype.type("nan"), 1.0
    ctx.probs, ctx.index = probs, index
    ctx.scale = xp.full(target.shape, share, dtype=x.dtype)
    return xp.asarray(out, dtype=x.dtype)


def _in_one_call(ctx, x, target, ignore_index: int, reduction: str):
    """The commonest call, logits (N, C) and no class weights: the softmax, the losses and their
    sum in one compiled call (``_cross_entropy_targets``), then, where some targets are
    ``ignore_index``, their masks over the (N,) targets alone. None, with ctx untouched, where
    the twin does not take the arrays, some target is not a class (the general path says which)
    or every target is ignored (a mean of nothing)."""
    count = target.size
    if target.shape != x.shape[:1]:  # (the op's checks report a mismatch; the twin types none)
        return None
    probs, losses = np.empty_like(x), np.empty(count, x.dtype)
    total, skipped = np.empty(1, x.dtype), np.empty(2, np.int64)
    arrays = (x, target, probs, losses, total, skipped)
    if not compiled.run(_cross_entropy_targets, arrays, {"ignore_index": ignore_index}):
        return None
    ignored, outside = int(skipped[0]), int(skipped[1])
    if outside or ignored == count:
        return None
    counted = count - ignored
    if reduction == "none":
        out, share = losses, 1.0
    elif reduction == "sum":
        out, share = total[0], 1.0
    else:
        out, share = total[0] / x.dtype.type(counted), 1.0 / counted
    ctx.probs = probs
    if ignored:  # an ignored sample has no share, and its index picks class 0 harmlessly
        valid = target != ignore_index
        ctx.index = np.where(valid, target, 0)[:, None]
        ctx.scale = np.where(valid, x.dtype.type(share), x.dtype.type(0))
    else:
        ctx.index, ctx.scale = target[:, None], _shares(count, share, x.dtype)
    return np.asarray(out, dtype=x.dtype)


@functools.lru_cache(maxsize=16)
def _shares(count: int, share: float, dtype) -> np.ndarray:
    """(count,) of ``share``, read-only (cached: the same batch size recurs every step)."""
    shares = np.full(count, share, dtype=dtype)
    shares.flags.writeable = False
    return shares


def cross_entropy_grad(ctx, xp, grad, x, probs, scale, *, index, axis):
    """(N, C): the scaled softmax minus the one-hot part in one compiled pass over the rows
    (float32), else the scaled softmax with rows cut across threads and the one-hot part
    subtracted with one fancy index."""
    coefficients = grad * scale  # (N,)
    if xp is np and index.shape == probs.shape[:1] + (1,) == coefficients.shape + (1,):
        out = np.empty_like(probs)
        if compiled.run(_softmax_minus_one_hot, (probs, coefficients, index, out)):
            return out
    coefficient = coefficients[:, None]  # (N, 1)
    out = None
    if probs.dtype == coefficient.dtype == np.float32:
        out = xp.empty_like(probs)
        rows = trailing_rows((axis,), probs, coefficient, out)
        if rows is not None:
            split_rows(xp, _scale_rows, *rows)
        else:
            out = None
    if out is None:
        out = probs * coefficient
    out[_row_numbers(xp, out.shape[0]), index[:, 0]] -= coefficient[:, 0]
    return out


def log_softmax_nll_grad(ctx, xp, grad, log_probs, scale, *, index, axis):
    """(N, C) float32 log-probabilities: the exponentials of each row scaled by its coefficient
    and the coefficient added at the target, in one compiled pass over the rows (no scattered
    array of zeros, no second pass reading it)."""
    dtype = np.result_type(log_probs.dtype, grad.dtype, scale.dtype)
    coefficients = (-(grad * scale)).astype(dtype, copy=False)  # nll_loss_grad's (N,)
    if coefficients.shape != log_probs.shape[:1] or log_probs.dtype != dtype:
        return NotImplemented
    out = np.empty_like(log_probs)
    if not compiled.run(_exp_minus_one_hot, (log_probs, coefficients, index, out)):
        _exp_minus_one_hot(np, log_probs, coefficients, index, out)
    return out


def _log_softmax_nll_grad_fits(xp, grad, log_probs, scale, *, index, axis) -> bool:
    """NumPy log-probabilities (N, C) with the classes along axis 1 and one target each."""
    return (
        xp is np
        and log_probs.ndim == 2
        and axis in (1, -1)
        and index.shape == (log_probs.shape[0], 1)
        and log_probs.size > 0
    )


def _at_targets(xp, array, index, axis: int):
    """``take_along_axis(array, index, axis)``; (N, C) along 1 as one fancy index (NumPy's
    take_along_axis builds its index grids in Python)."""
    if array.ndim == 2 and axis == 1:
        return array[_row_numbers(xp, array.shape[0]), index[:, 0]][:, None]
    return xp.take_along_axis(array, index, axis=axis)


def _row_numbers(xp, count: int):
    """0, 1, ..., count - 1 (cached for NumPy: the same few batch sizes recur every step)."""
    return _numpy_rows(count) if xp is np else xp.arange(count)


@functools.lru_cache(maxsize=16)
def _numpy_rows(count: int) -> np.ndarray:
    rows = np.arange(count)
    rows.flags.writeable = False
    return rows


register(
    CROSS_ENTROPY,
    lambda xp, x, *arrays, axis, **attrs: x.dtype == np.float32 and x.size > 0,
    cross_entropy,
    name="cross_entropy.rows",
    description="float32 logits: softmax, maximum and log-sum in one pass over each row",
)
register(
    LOG_SOFTMAX_NLL_GRAD,
    _log_softmax_nll_grad_fits,
    log_softmax_nll_grad,
    name="log_softmax_nll_grad.rows",
    description="(N, C): scaled exponentials and the target's coefficient in one compiled "
    "pass over the rows",
)
register(
    CROSS_ENTROPY_GRAD,
    lambda xp, grad, x, probs, scale, *, index, axis: probs.ndim == 2 and axis == 1,
    cross_entropy_grad,
    name="cross_entropy_grad.rows",
    description="(N, C): scaled softmax rows cut across threads, one fancy-indexed subtraction",
)
