"""A small matrix product for the recurrent layers' time loops (``compiled/recurrence.py``) and
fused attention's per-item products (``compiled/attention.py``): ``c = a @ b`` for a few rows
of ``a`` (a batch's hidden states, 5 to 64 rows) by a weight packed once into panels of
``PANEL`` columns.

Each step of an LSTM's time loop multiplies its (N, H) hidden state by the (H, 4H) recurrent
weight. A BLAS packs both operands on every call, and with N around 20 its kernel runs on a
few rows: OpenBLAS reaches about 60% of its large-product speed there, and less on half the
rows (each thread's share at two threads). The weight does not change during the loop, so
here it is packed once, by the caller, as contiguous panels (parts, k, PANEL), and each tile
reads a panel straight: ``ROWS`` rows of ``a``, one value at a time broadcast, times
``VECTORS`` vectors of the panel's row, into ``ROWS * VECTORS`` accumulators kept in
registers, stored whole (``docs/design_notes/performance.md``, "Recurrent products on packed
panels").

The NumPy reference is ``a @ joined(panels)``. The sums run in blocks of ``SUM_BLOCK`` terms
(``tile_ir.blocked_sum``), which keeps float32 error within PyTorch's own.
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from . import tile_ir as t
from .disk_cache import keyed
from .tile_ir import LANES, index

ROWS = 5  # rows of a tile: ROWS * VECTORS accumulators, VECTORS loads and a broadcast in 16
VECTORS = 2
PANEL = VECTORS * LANES  # columns of one packed panel
SUM_BLOCK = 64  # terms summed from zero before they join the total

_POINTER = t.FLOAT.as_pointer()


def panel_tile(rows: int, down_columns: bool = False):
    """``panel_tile(a_at, lda, b_at, inner, c_at, ldc)``, all int64: for r < ``rows`` and j <
    ``PANEL``, ``c[r * ldc + j] = sum over k < inner of a[r * lda + k] * b[k * PANEL + j]``,
    where a, b, c are float32 at the addresses ``a_at``, ``b_at`` (a packed panel, contiguous)
    and ``c_at``. ``down_columns``: a is read down its first ``rows`` columns instead,
    ``a[k * lda + r]``, so a matrix's transpose multiplies in place."""

    @intrinsic
    def tile(typing_context, a_at, lda, b_at, inner, c_at, ldc):
        signature = types.void(a_at, lda, b_at, inner, c_at, ldc)

        def codegen(context, builder, signature, arguments):
            a_at, lda, b_at, inner, c_at, ldc = arguments
            a, b, c = (builder.inttoptr(at, _POINTER) for at in (a_at, b_at, c_at))
            row_starts = [builder.mul(index(r), lda) for r in range(rows)]

            def a_value(r, k):
                """The address of a's term k of tile row r."""
                if down_columns:
                    return builder.add(builder.mul(k, lda), index(r))
                return builder.add(row_starts[r], k)

            def step(k, sums):
                """Term k: one row of the panel times one value of each row of a."""
                row = builder.mul(k, index(PANEL))
                loaded = [
                    t.load(builder, b, builder.add(row, index(v * LANES))) for v in range(VECTORS)
                ]
                updated = []
                for r in range(rows):
                    value = t.splat(builder, t.scalar(builder, a, a_value(r, k)))
                    updated += [
                        t.fma(builder, value, loaded[v], sums[r * VECTORS + v])
                        for v in range(VECTORS)
                    ]
                return updated

            zeros = [ir.Constant(t.VECTOR, None)] * (rows * VECTORS)
            final = t.blocked_sum(builder, index(0), inner, SUM_BLOCK, zeros, step)
            for r in range(rows):
                start = builder.mul(index(r), ldc)
                for v in range(VECTORS):
                    at = builder.add(start, index(v * LANES))
                    t.store(builder, final[r * VECTORS + v], c, at)
            return context.get_dummy_value()

        return signature, codegen

    name = "panel_tile_down_columns" if down_columns else "panel_tile"
    return keyed(tile, name, rows, VECTORS, SUM_BLOCK)


_TILES = tuple(panel_tile(rows) for rows in range(1, ROWS + 1))
_ONE, _TWO, _THREE, _FOUR, _FIVE = _TILES


@njit(nogil=True, cache=True)
def panel_product(rows, a_at, lda, panels, c_at, ldc):
    """c = a @ b: a (rows, k) float32 at address ``a_at``, leading dimension ``lda``; b as its
    packed panels (parts, k, PANEL), contiguous; c (rows, parts * PANEL) at ``c_at``, leading
    dimension ``ldc``. Panel by panel (it stays in L1 for all of a's rows), ROWS rows at a
    time, then the rows left over."""
    parts, inner = panels.shape[0], panels.shape[1]
    whole = rows - rows % ROWS
    for part in range(parts):
        b_at = panels[part].ctypes.data
        out_at = c_at + 4 * part * PANEL
        for start in range(0, whole, ROWS):
            _FIVE(a_at + 4 * start * lda, lda, b_at, inner, out_at + 4 * start * ldc, ldc)
        left = rows - whole
        if left:
            a_left, c_left = a_at + 4 * whole * lda, out_at + 4 * whole * ldc
            if left == 1:
                _ONE(a_left, lda, b_at, inner, c_left, ldc)
            elif left == 2:
                _TWO(a_left, lda, b_at, inner, c_left, ldc)
            elif left == 3:
                _THREE(a_left, lda, b_at, inner, c_left, ldc)
            else:
                _FOUR(a_left, lda, b_at, inner, c_left, ldc)
