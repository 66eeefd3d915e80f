"""Compiled twins of the row-wise kernels: softmax, log_softmax, layer normalisation and
cross-entropy, forward and backward, and the cumulative sum along rows. Each takes (rows, n)
float32 arrays (and (rows, 1) ones for per-row values), runs its rows on numba's threads and each
row in a few passes over that row, which stays in cache between them: one read of the inputs and
one write of the outputs.

The NumPy row kernels they twin (same arguments, plus ``xp`` first) are in ``accel/rows.py``,
registered for the ops of ``ops/nn.py``, ``ops/norm.py``, ``ops/layer_norm.py`` and
``ops/loss.py``. Row sums are float32 like the references' (einsum's
running sums), here reordered into vector lanes; every other formula is the reference's, so
results agree to a few units in the last place (``tests/accel/kernels/test_compiled_rows.py``).
NaN and inf propagate as in the references: a row holding NaN or +inf gives NaN (inf - inf), a
row of only -inf gives NaN (-inf - -inf), -inf entries of a finite row give 0 (log: -inf).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .expf import exp32_nonpositive

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_MINUS_INF = np.float32(-np.inf)

# contract: a multiply and the add after it become one FMA (one rounding instead of two). No
# reassociation: the exp's range reduction relies on its operations' order, so sums are split
# into lanes by hand below.
kernel = njit(parallel=True, nogil=True, cache=True, fastmath={"contract"})
inline = njit(inline="always", fastmath={"contract"})


@inline
def _max(row):
    """The largest value of a 1-D float32 row (n >= 1), in eight interleaved running maxima. NaN
    entries are skipped: every caller subtracts the maximum from the row and sums the
    exponentials, where a NaN entry makes the whole row NaN, as in the reference."""
    n = row.size
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = _MINUS_INF
    j = 0
    while j + 8 <= n:
        m0 = max(m0, row[j])
        m1 = max(m1, row[j + 1])
        m2 = max(m2, row[j + 2])
        m3 = max(m3, row[j + 3])
        m4 = max(m4, row[j + 4])
        m5 = max(m5, row[j + 5])
        m6 = max(m6, row[j + 6])
        m7 = max(m7, row[j + 7])
        j += 8
    while j < n:
        m0 = max(m0, row[j])
        j += 1
    return max(max(max(m0, m1), max(m2, m3)), max(max(m4, m5), max(m6, m7)))


@inline
def _nan_max(row):
    """The largest value of a 1-D row, NaN when the row holds one (as NumPy's ``max``)."""
    m = _MINUS_INF
    for j in range(row.size):
        v = row[j]
        if v != v:
            return v
        m = v if v > m else m
    return m


# Sums may be reordered (into vector lanes): float32 running sums, like the references' einsum.
# Not inlined into the kernels at numba's level, so that the reordering stays in them.
reduction = njit(nogil=True, cache=True, fastmath={"contract", "reassoc"})


# Long rows are summed in blocks this long, each block's vectorised sum from zero: float32
# rounding then grows with the block and the number of blocks, not with the row (a sum's lanes
# are 8 with AVX2, each would otherwise add up an eighth of the row one term after another).
# Each block is a slice handed to a plain loop, the form numba vectorises best.
SUM_BLOCK = 512


@reduction
def _block_sum(row):
    """The float32 sum of a 1-D row of at most ``SUM_BLOCK`` entries, from zero."""
    total = _ZERO
    for j in range(row.size):
        total += row[j]
    return total


@reduction
def _block_dot(a, b):
    """The float32 sum of a * b for two 1-D rows of at most ``SUM_BLOCK`` entries, from zero."""
    total = _ZERO
    for j in range(a.size):
        total += a[j] * b[j]
    return total


@reduction
def _sum(row):
    """The float32 sum of a 1-D row, block by block."""
    total = _ZERO
    for start in range(0, row.size, SUM_BLOCK):
        total += _block_sum(row[start : start + SUM_BLOCK])
    return total


@reduction
def _dot(a, b):
    """The float32 sum of a * b for two 1-D rows, block by block (as ``_sum``)."""
    total = _ZERO
    for start in range(0, a.size, SUM_BLOCK):
        total += _block_dot(a[start : start + SUM_BLOCK], b[start : start + SUM_BLOCK])
    return total


@inline
def _exp_shifted(x, out):
    """out = exp(x - max(x)) for 1-D rows; returns (max, sum of out)."""
    m = _max(x)
    for j in range(x.size):
        out[j] = exp32_nonpositive(x[j] - m)  # x - max <= 0, or NaN
    return m, _sum(out)


# ----- softmax ------------------------------------------------------------------------------------


@inline
def _softmax_row(x, out):
    _, total = _exp_shifted(x, out)
    for j in range(x.size):
        out[j] = out[j] / total


@kernel
def softmax_rows(x, out):
    """out = exp(x - max) / sum(exp(x - max)) per row (``rows._softmax_kernel``)."""
    for r in prange(x.shape[0]):
        _softmax_row(x[r], out[r])


@kernel
def softmax_rows_shifted(x, out, shift):
    """``rows._softmax_rows_shifted``: the same softmax, each row shifted by its own maximum. The
    reference's shared ``shift`` saves NumPy a per-row maximum; here that maximum is one more
    pass over a row already in cache, and it needs no fallback for rows far below ``shift``."""
    for r in prange(x.shape[0]):
        _softmax_row(x[r], out[r])


@kernel
def softmax_grad_rows(grad, out, result):
    """result = out * (grad - sum(grad * out)) per row (``rows._softmax_grad_kernel``)."""
    for r in prange(grad.shape[0]):
        g, o, res = grad[r], out[r], result[r]
        projection = _dot(g, o)
        for j in range(g.size):
            res[j] = (g[j] - projection) * o[j]


# ----- log_softmax --------------------------------------------------------------------------------


@kernel
def log_softmax_rows(x, out):
    """out = x - max - log(sum(exp(x - max))) per row (``rows._log_softmax_kernel``)."""
    for r in prange(x.shape[0]):
        row, res = x[r], out[r]
        m, total = _exp_shifted(row, res)
        log_total = np.log(total)
        for j in range(row.size):
            res[j] = (row[j] - m) - log_total


@kernel
def log_softmax_grad_rows(grad, out, result):
    """result = grad - exp(out) * sum(grad) per row (``rows._log_softmax_grad_kernel``)."""
    for r in prange(grad.shape[0]):
        g, o, res = grad[r], out[r], result[r]
        total = _sum(g)
        for j in range(g.size):
            res[j] = g[j] - exp32_nonpositive(o[j]) * total  # log-probabilities: <= 0


# ----- layer normalisation ------------------------------------------------------------------------


@reduction
def _centered_squares(row, mean):
    """The float32 sum of (row - mean)^2 for a 1-D row."""
    total = _ZERO
    for j in range(row.size):
        d = row[j] - mean
        total += d * d
    return total


@inline
def _row_statistics(x, eps, scale):
    """(mean, 1 / sqrt(var + eps)) of a 1-D row: the mean first, then the centred squares, each
    one pass over the row (no centred copy written)."""
    mean = _sum(x) * scale
    variance = _centered_squares(x, mean) * scale + eps
    return mean, _ONE / np.sqrt(variance)


@inline
def _standardize_row(x, out, eps, scale):
    """out = (x - mean) / sqrt(var + eps) for 1-D rows; returns 1 / sqrt(var + eps)."""
    mean, rstd = _row_statistics(x, eps, scale)
    for j in range(x.size):
        out[j] = (x[j] - mean) * rstd
    return rstd


@kernel
def standardize_rows(x, out, rstd, eps):
    """out = (x - mean) * rstd, rstd = 1 / sqrt(var + eps) per row (``rows._standardize_rows``)."""
    eps = np.float32(eps)
    scale = np.float32(1 / x.shape[1])
    for r in prange(x.shape[0]):
        rstd[r, 0] = _standardize_row(x[r], out[r], eps, scale)


@kernel
def layer_norm_rows(x, xhat, out, rstd, weight, bias, eps):
    """xhat = standardize(x), out = xhat * weight + bias per row, rstd as ``standardize_rows``
    (``rows._layer_norm_rows``); ``bias`` may be None."""
    eps = np.float32(eps)
    scale = np.float32(1 / x.shape[1])
    for r in prange(x.shape[0]):
        row, h, res = x[r], xhat[r], out[r]
        mean, row_rstd = _row_statistics(row, eps, scale)
        rstd[r, 0] = row_rstd
        if bias is None:
            for j in range(h.size):
                value = (row[j] - mean) * row_rstd
                h[j] = value
                res[j] = value * weight[j]
        else:
            for j in range(h.size):
                value = (row[j] - mean) * row_rstd
                h[j] = value
                res[j] = value * weight[j] + bias[j]


@reduction
def _sum_and_dot(g, h):
    """(sum(g), sum(g * h)) for 1-D rows, in one pass."""
    total = _ZERO
    projection = _ZERO
    for j in range(g.size):
        total += g[j]
        projection += g[j] * h[j]
    return total, projection


@reduction
def _weighted_sum_and_dot(g, w, h):
    """(sum(g * w), sum(g * w * h)) for 1-D rows, in one pass."""
    total = _ZERO
    projection = _ZERO
    for j in range(g.size):
        product = g[j] * w[j]
        total += product
        projection += product * h[j]
    return total, projection


@inline
def _standardize_grad_row(g, h, rstd, out, scale):
    """out = rstd * (g - mean(g) - h * mean(g * h)) for 1-D rows (out may be g)."""
    total, projection = _sum_and_dot(g, h)
    mean, projection = total * scale, projection * scale
    for j in range(g.size):
        out[j] = ((g[j] - mean) - h[j] * projection) * rstd


@kernel
def standardize_grad_rows(g, xhat, rstd, out):
    """out = rstd * (g - mean(g) - xhat * mean(g * xhat)) per row
    (``rows._standardize_grad_rows``)."""
    scale = np.float32(1 / g.shape[1])
    for r in prange(g.shape[0]):
        _standardize_grad_row(g[r], xhat[r], rstd[r, 0], out[r], scale)


@kernel
def layer_norm_input_grad_rows(grad, xhat, rstd, out, weight):
    """out = standardize_grad(grad * weight) per row (``rows._layer_norm_input_grad_rows``):
    the two row sums of the product in one pass, then the combination with the product
    computed again."""
    scale = np.float32(1 / grad.shape[1])
    for r in prange(grad.shape[0]):
        g, h, res, row_rstd = grad[r], xhat[r], out[r], rstd[r, 0]
        total, projection = _weighted_sum_and_dot(g, weight, h)
        mean, projection = total * scale, projection * scale
        if g.size == 1:  # the product is its own mean: exactly zero (NaN and inf kept)
            res[0] = ((total - mean) - h[0] * projection) * row_rstd
            continue
        for j in range(g.size):  # g * w - mean may become one FMA: rounded once
            res[j] = ((g[j] * weight[j] - mean) - h[j] * projection) * row_rstd


# ----- cross-entropy ------------------------------------------------------------------------------


@kernel
def cross_entropy_rows(x, probs, peak, log_total):
    """probs = softmax(x), peak = max(x), log_total = log(sum(exp(x - peak))) per row
    (``rows._cross_entropy_rows``)."""
    for r in prange(x.shape[0]):
        p = probs[r]
        m, total = _exp_shifted(x[r], p)
        for j in range(p.size):
            p[j] = p[j] / total
        if total != total:  # NaN, inf or only -inf in the row: the maximum as NumPy takes it
            m = _nan_max(x[r])
        peak[r, 0] = m
        log_total[r, 0] = np.log(total)


@kernel
def cross_entropy_targets(x, target, probs, losses, total, skipped, ignore_index):
    """probs = softmax(x) per row of x (rows, C); losses (rows,) = -log_softmax(x) at each row's
    target, -0.0 where the target is ``ignore_index`` or not a class; total (1,) the losses' sum
    (added in float64); skipped (2,) the rows whose target is ``ignore_index`` and those whose
    target is not a class (``rows._cross_entropy_targets``)."""
    rows, classes = x.shape
    for r in prange(rows):
        row, p = x[r], probs[r]
        m, sum_exp = _exp_shifted(row, p)
        for j in range(p.size):
            p[j] = p[j] / sum_exp
        if sum_exp != sum_exp:  # NaN, inf or only -inf in the row: the maximum as NumPy takes it
            m = _nan_max(row)
        c = target[r]
        counted = c != ignore_index and 0 <= c < classes
        losses[r] = -((row[c] - m) - np.log(sum_exp)) if counted else -_ZERO
    added, ignored, outside = 0.0, 0, 0
    for r in range(rows):  # in order: the same sum on any number of threads
        c = target[r]
        if c == ignore_index:
            ignored += 1
        elif 0 <= c < classes:
            added += losses[r]
        else:
            outside += 1
    total[0] = np.float32(added)
    skipped[0], skipped[1] = ignored, outside


@kernel
def softmax_minus_one_hot(probs, coefficients, index, out):
    """out = probs * coefficients[r] per row r, minus coefficients[r] at column index[r, 0]
    (``rows._softmax_minus_one_hot``); an index outside the row subtracts nothing."""
    for r in prange(probs.shape[0]):
        c = coefficients[r]
        p, res = probs[r], out[r]
        for j in range(p.size):
            res[j] = p[j] * c
        k = index[r, 0]
        if 0 <= k < p.size:
            res[k] -= c


@kernel
def exp_minus_one_hot(log_probs, coefficients, index, out):
    """out = 0 - exp(log_probs) * coefficients[r] per row r, and coefficients[r] - exp(...) *
    coefficients[r] at column index[r, 0] (``rows._exp_minus_one_hot``): each value as
    ``log_softmax_grad_rows`` computes it from the scattered coefficients; an index outside the
    row adds nothing."""
    for r in prange(log_probs.shape[0]):
        c = coefficients[r]
        y, res = log_probs[r], out[r]
        for j in range(y.size):
            res[j] = _ZERO - exp32_nonpositive(y[j]) * c  # log-probabilities: <= 0
        k = index[r, 0]
        if 0 <= k < y.size:
            res[k] = c - exp32_nonpositive(y[k]) * c


@kernel
def scale_rows(a, coefficient, out):
    """out = a * coefficient per row, coefficient (rows, 1) (``rows._scale_rows``)."""
    for r in prange(a.shape[0]):
        c = coefficient[r, 0]
        row, res = a[r], out[r]
        for j in range(row.size):
            res[j] = row[j] * c


# ----- column reductions: parameter gradients of normalisations and biases ---------------------
# The rows are cut into blocks of a fixed size; each task sums one block into its own partial
# row (contiguous, vectorised adds), eight rows at a time in pairs, and the partial rows are
# added in pairs at the end: the result does not depend on the number of threads, and float32
# rounding stays near that of pairwise summation rather than growing with the number of rows.
_ROWS = 128  # rows per block


@kernel
def column_sum(a, out):
    """out (n,) = the sum of a (rows, n) over its rows."""
    partial = np.empty(((a.shape[0] + _ROWS - 1) // _ROWS, a.shape[1]), np.float32)
    for block in prange(partial.shape[0]):
        _sum_block(a, a, block, partial[block], False)
    _add_rows(partial, out)


@kernel
def column_dot(a, b, out):
    """out (n,) = the sum of a * b (rows, n) over its rows."""
    partial = np.empty(((a.shape[0] + _ROWS - 1) // _ROWS, a.shape[1]), np.float32)
    for block in prange(partial.shape[0]):
        _sum_block(a, b, block, partial[block], True)
    _add_rows(partial, out)


@kernel
def column_dot_and_sum(a, b, out):
    """out (2, n) = the sums of a * b and of a (rows, n) over their rows, in one pass: each
    block of rows adds into its own two partial rows."""
    blocks = (a.shape[0] + _ROWS - 1) // _ROWS
    products = np.empty((blocks, a.shape[1]), np.float32)
    totals = np.empty((blocks, a.shape[1]), np.float32)
    for block in prange(blocks):
        _dot_and_sum_block(a, b, block, products[block], totals[block])
    _add_rows(products, out[0])
    _add_rows(totals, out[1])


@inline
def _dot_and_sum_block(a, b, block, product, total):
    """product and total = the sums over block ``block`` of a * b and of a, four rows at a
    time added in pairs before they join the totals."""
    product[:] = _ZERO
    total[:] = _ZERO
    i, last = block * _ROWS, min(block * _ROWS + _ROWS, a.shape[0])
    while i + 4 <= last:
        a0, a1, a2, a3 = a[i], a[i + 1], a[i + 2], a[i + 3]
        b0, b1, b2, b3 = b[i], b[i + 1], b[i + 2], b[i + 3]
        for j in range(total.size):
            product[j] += (a0[j] * b0[j] + a1[j] * b1[j]) + (a2[j] * b2[j] + a3[j] * b3[j])
            total[j] += (a0[j] + a1[j]) + (a2[j] + a3[j])
        i += 4
    while i < last:
        row_a, row_b = a[i], b[i]
        for j in range(total.size):
            product[j] += row_a[j] * row_b[j]
            total[j] += row_a[j]
        i += 1


@inline
def _sum_block(a, b, block, total, product):
    """total = the sum over block ``block`` of a's rows (of a * b with ``product``), each eight
    rows added in pairs before they join the total."""
    total[:] = _ZERO
    i, last = block * _ROWS, min(block * _ROWS + _ROWS, a.shape[0])
    while i + 8 <= last:
        a0, a1, a2, a3, a4, a5, a6, a7 = (a[i], a[i + 1], a[i + 2], a[i + 3], a[i + 4],
                                          a[i + 5], a[i + 6], a[i + 7])  # fmt: skip
        if product:
            b0, b1, b2, b3, b4, b5, b6, b7 = (b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4],
                                              b[i + 5], b[i + 6], b[i + 7])  # fmt: skip
            for j in range(total.size):
                total[j] += ((a0[j] * b0[j] + a1[j] * b1[j]) + (a2[j] * b2[j] + a3[j] * b3[j])) + (
                    (a4[j] * b4[j] + a5[j] * b5[j]) + (a6[j] * b6[j] + a7[j] * b7[j])
                )
        else:
            for j in range(total.size):
                total[j] += ((a0[j] + a1[j]) + (a2[j] + a3[j])) + (
                    (a4[j] + a5[j]) + (a6[j] + a7[j])
                )
        i += 8
    while i < last:
        row_a = a[i]
        if product:
            row_b = b[i]
            for j in range(total.size):
                total[j] += row_a[j] * row_b[j]
        else:
            for j in range(total.size):
                total[j] += row_a[j]
        i += 1


@inline
def _add_rows(partial, out):
    """out = the sum of partial's rows, added in pairs (a tree; partial is overwritten)."""
    step = 1
    while step < partial.shape[0]:
        for block in range(0, partial.shape[0] - step, 2 * step):
            row, other = partial[block], partial[block + step]
            for j in range(row.size):
                row[j] += other[j]
        step *= 2
    out[:] = partial[0]


@kernel
def cumsum_rows(x, out, exclusive, reverse):
    """out (rows, n) = the cumulative sum of each row of x (rows, n), from the end with
    ``reverse``, each element left out with ``exclusive`` (the first output 0): float32 sums
    in the order NumPy's ``cumsum`` adds (the first output is the first element itself), so
    the same bits; one row per task."""
    rows, n = x.shape
    for row in prange(rows):
        values, sums = x[row], out[row]
        first = n - 1 if reverse else 0
        step = -1 if reverse else 1
        total = values[first]
        sums[first] = _ZERO if exclusive else total
        k = first
        for _ in range(n - 1):
            k += step
            if exclusive:
                sums[k] = total
                total += values[k]
            else:
                total += values[k]
                sums[k] = total
