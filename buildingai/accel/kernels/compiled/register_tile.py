"""Register tiles for the direct convolution (``compiled/conv.py``), emitted as LLVM IR for the
CPU's vector width (``tile_ir.LANES`` float32 values per vector).

A register tile keeps a few dozen accumulator vectors in registers for a whole loop of fused
multiply-adds: the inner kernel of a GEMM. numba's loops do not keep that many accumulators in
registers, so each tile is a numba intrinsic whose IR carries them as SSA values through its
loops (``tile_ir.loop``). Loads and stores need no alignment; masked lanes are neither read nor
written, so a tile may straddle the end of an image row or the edge of the zero padding.

- ``grid_tile``: forward correlation without padding. Output positions are taken on the input's
  grid (rows as wide as the input, the last kw - 1 of each thrown away), so every tap is one
  shift of the flat image: ``rows`` output channels x ``vectors * LANES`` grid positions, one
  weight broadcast per channel and tap.
- ``window_tile``: forward correlation with zero padding, read in place: ``rows`` output
  channels x ``vectors * LANES`` columns of one output row; the padding is the lanes and rows a
  tap's masks leave out.
- ``dot_tile``: the weight gradient: ``rows`` output channels x ``taps`` kernel columns of one
  (input channel, kernel row), each a vector of partial sums over output positions, summed over
  a range of samples and added to a partial result at the end.
- ``sum_tile``: the weight gradient with the output gradient channels-last: ``rows`` taps x
  ``vectors * LANES`` output channels, one input value broadcast per tap and position.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from . import tile_ir as t
from .disk_cache import keyed
from .tile_ir import LANES, index


def grid_tile(rows: int, vectors: int, block: int, rectify: bool = False):
    """``grid_tile(x, x_start, offsets, first, limit, weights, weight_start, weight_stride,
    bias, out, out_start, out_plane, out_rows, width, out_width)``.

    Grid position p is output row p // width, column p % width; tap k of p reads
    ``x[x_start + offsets[k] + p]``. The tile covers p = first + v*LANES + lane for v <
    vectors, reading where p < limit, and for r < rows stores ``bias[weight_start + r] + sum
    over k of weights[weight_start + k*weight_stride + r] * x[...]`` to ``out[out_start +
    r*out_plane + (p // width)*out_width + p % width]`` where r < out_rows, p < limit and
    p % width < out_width. The taps are summed ``block`` at a time (``tile_ir.blocked_sum``).
    With ``rectify``, each sum is stored as max(sum, 0) (``tile_ir.rectified``).
    x, weights, bias, out: float32 1-D; offsets: int64 1-D; the rest int64.
    """

    @intrinsic
    def tile(typing_context, x, x_start, offsets, first, limit, weights, weight_start,
             weight_stride, bias, out, out_start, out_plane, out_rows, width, out_width):  # fmt: skip
        signature = types.void(x, x_start, offsets, first, limit, weights, weight_start,
                               weight_stride, bias, out, out_start, out_plane, out_rows, width,
                               out_width)  # fmt: skip

        def codegen(context, builder, signature, arguments):
            kinds = signature.args
            x_data, offset_data, weight_data, bias_data, out_data = (
                t.data(context, builder, kinds[i], arguments[i]) for i in (0, 2, 5, 8, 9)
            )
            (_, x_start, offsets, first, limit, _, weight_start, weight_stride, _, _, out_start,
             out_plane, out_rows, width, out_width) = arguments  # fmt: skip
            steps = t.length(context, builder, kinds[2], offsets)
            positions = [t.lanes(builder, first, v * LANES) for v in range(vectors)]
            readable = [t.within(builder, p, index(0), limit) for p in positions]
            start = []
            for r in range(rows):
                value = t.scalar(builder, bias_data, builder.add(weight_start, index(r)))
                start += [t.splat(builder, value)] * vectors

            def step(k, accumulators):
                base = builder.add(x_start, t.scalar(builder, offset_data, k))
                inputs = [
                    t.masked_load(builder, x_data, builder.add(base, index(v * LANES)), readable[v])
                    for v in range(vectors)
                ]
                row_start = builder.add(weight_start, builder.mul(k, weight_stride))
                updated = []
                for r in range(rows):
                    weight = t.scalar(builder, weight_data, builder.add(row_start, index(r)))
                    broadcast = t.splat(builder, weight)
                    updated += [
                        t.fma(builder, broadcast, inputs[v], accumulators[r * vectors + v])
                        for v in range(vectors)
                    ]
                return updated

            final = t.blocked_sum(builder, index(0), steps, block, start, step)
            if rectify:
                final = [t.rectified(builder, value) for value in final]
            last = builder.add(first, index(vectors * LANES - 1))

            def store_row(line, unchanged):
                # lane p of output row ``line`` lands at out[... + line*out_width + p - line*width]
                line_start = builder.mul(line, width)
                shift = builder.sub(builder.mul(line, out_width), line_start)
                line_end = builder.add(line_start, out_width)
                end = builder.select(builder.icmp_signed("<", line_end, limit), line_end, limit)
                for v in range(vectors):
                    inside = builder.and_(
                        t.within(builder, positions[v], line_start, line_end), readable[v]
                    )
                    vector_start = builder.add(first, index(v * LANES))
                    lane_start = builder.add(vector_start, shift)
                    whole_vector = builder.and_(
                        builder.icmp_signed(">=", vector_start, line_start),
                        builder.icmp_signed("<=", builder.add(vector_start, index(LANES)), end),
                    )
                    for r in range(rows):
                        present = builder.icmp_signed("<", index(r), out_rows)
                        mask = builder.and_(inside, t.all_lanes(builder, present))
                        whole = builder.and_(whole_vector, present)
                        at = builder.add(builder.add(out_start, builder.mul(index(r), out_plane)),
                                         lane_start)  # fmt: skip
                        t.store_kept(builder, final[r * vectors + v], out_data, at, mask, whole)
                return unchanged

            first_line = builder.sdiv(first, width)
            t.loop(builder, first_line, builder.add(builder.sdiv(last, width), index(1)), [],
                   store_row)  # fmt: skip
            return context.get_dummy_value()

        return signature, codegen

    return keyed(tile, "grid_tile", rows, vectors, block, rectify)


def window_tile(rows: int, vectors: int, block: int | None):
    """``window_tile(x, x_start, geometry, weights, weight_start, weight_stride, bias, out,
    out_start, out_plane, out_rows, line, left)``.

    ``geometry`` (int64): channels, height, width, kh, kw, ph, pw, out_width of one sample
    ``x[x_start:]`` (C, H, W). For r < rows, v < vectors, lanes l, with column w = left +
    v*LANES + l of output row ``line``: stores ``bias[weight_start + r] + sum over (c, i, j)
    of weights[weight_start + ((c*kh + i)*kw + j)*weight_stride + r] * x[c, line + i - ph,
    w + j - pw]`` (zero outside the image) to ``out[out_start + r*out_plane + v*LANES + l]``
    where r < out_rows and w < out_width. With a ``block``, each tap's sum over channels runs
    in blocks of ``block`` channels (``tile_ir.blocked_sum``).
    """

    @intrinsic
    def tile(typing_context, x, x_start, geometry, weights, weight_start, weight_stride, bias,
             out, out_start, out_plane, out_rows, line, left):  # fmt: skip
        signature = types.void(x, x_start, geometry, weights, weight_start, weight_stride, bias,
                               out, out_start, out_plane, out_rows, line, left)  # fmt: skip

        def codegen(context, builder, signature, arguments):
            kinds = signature.args
            x_data, shape_data, weight_data, bias_data, out_data = (
                t.data(context, builder, kinds[i], arguments[i]) for i in (0, 2, 3, 6, 7)
            )
            (_, x_start, _, _, weight_start, weight_stride, _, _, out_start, out_plane, out_rows,
             line, left) = arguments  # fmt: skip
            channels, height, width, kh, kw, ph, pw, out_width = (
                t.scalar(builder, shape_data, index(k)) for k in range(8)
            )
            plane = builder.mul(height, width)
            taps = builder.mul(kh, kw)
            channel_stride = builder.mul(taps, weight_stride)
            start = []
            for r in range(rows):
                value = t.scalar(builder, bias_data, builder.add(weight_start, index(r)))
                start += [t.splat(builder, value)] * vectors

            def kernel_row(i, accumulators):
                row = builder.sub(builder.add(line, i), ph)
                inside = builder.and_(
                    builder.icmp_signed(">=", row, index(0)), builder.icmp_signed("<", row, height)
                )

                def columns(values):
                    return t.loop(builder, index(0), kw, values, kernel_column)

                def kernel_column(j, values):
                    shift = builder.sub(j, pw)  # input column = output column + shift
                    masks = [
                        t.within(
                            builder,
                            t.lanes(builder, builder.add(left, shift), v * LANES),
                            index(0),
                            width,
                        )  # fmt: skip
                        for v in range(vectors)
                    ]
                    base = builder.add(x_start, builder.add(builder.mul(row, width), left))
                    base = builder.add(base, shift)
                    tap = builder.add(builder.mul(i, kw), j)
                    weight_base = builder.add(weight_start, builder.mul(tap, weight_stride))

                    def channel(c, sums):
                        at = builder.add(base, builder.mul(c, plane))
                        inputs = [
                            t.masked_load(
                                builder, x_data, builder.add(at, index(v * LANES)), masks[v]
                            )  # fmt: skip
                            for v in range(vectors)
                        ]
                        weight_row = builder.add(weight_base, builder.mul(c, channel_stride))
                        updated = []
                        for r in range(rows):
                            weight = t.scalar(builder, weight_data,
                                              builder.add(weight_row, index(r)))  # fmt: skip
                            broadcast = t.splat(builder, weight)
                            updated += [
                                t.fma(builder, broadcast, inputs[v], sums[r * vectors + v])
                                for v in range(vectors)
                            ]
                        return updated

                    if block is None:
                        return t.loop(builder, index(0), channels, values, channel)
                    return t.blocked_sum(builder, index(0), channels, block, values, channel)

                return t.when(builder, inside, accumulators, columns)

            final = t.loop(builder, index(0), kh, start, kernel_row)
            for v in range(vectors):
                columns = t.lanes(builder, left, v * LANES)
                kept = t.within(builder, columns, index(0), out_width)
                row_fits = builder.icmp_signed("<=", builder.add(left, index((v + 1) * LANES)),
                                               out_width)  # fmt: skip
                for r in range(rows):
                    present = builder.icmp_signed("<", index(r), out_rows)
                    mask = builder.and_(kept, t.all_lanes(builder, present))
                    at = builder.add(builder.add(out_start, builder.mul(index(r), out_plane)),
                                     index(v * LANES))  # fmt: skip
                    whole = builder.and_(row_fits, present)
                    t.store_kept(builder, final[r * vectors + v], out_data, at, mask, whole)
            return context.get_dummy_value()

        return signature, codegen

    return keyed(tile, "window_tile", rows, vectors, block)


def dot_tile(rows: int, taps: int, vectors: int):
    """``dot_tile(x, grad, geometry, first_sample, last_sample, channel, kernel_row, first_tap,
    first_output, sums, sums_start, sums_stride)``.

    ``geometry`` (int64): channels C, height H, width W, ph, pw, outputs O, out_height Ho,
    out_width Wo, for x (N, C, H, W) and grad (N, O, Ho, Wo), flat; ``vectors * LANES`` must be
    at least Wo. For r < rows, j < taps, adds ``sum over samples n in [first_sample,
    last_sample), h < Ho, w < Wo of grad[n, first_output + r, h, w] * x[n, channel, h +
    kernel_row - ph, w + first_tap + j - pw]`` (zero outside the image; rows past O count as
    zero) to ``sums[sums_start + r*sums_stride + j]``.
    """

    @intrinsic
    def tile(typing_context, x, grad, geometry, first_sample, last_sample, channel, kernel_row,
             first_tap, first_output, sums, sums_start, sums_stride):  # fmt: skip
        signature = types.void(x, grad, geometry, first_sample, last_sample, channel,
                               kernel_row, first_tap, first_output, sums, sums_start,
                               sums_stride)  # fmt: skip

        def codegen(context, builder, signature, arguments):
            kinds = signature.args
            x_data, grad_data, shape_data, sums_data = (
                t.data(context, builder, kinds[i], arguments[i]) for i in (0, 1, 2, 9)
            )
            (_, _, _, first_sample, last_sample, channel, kernel_row, first_tap, first_output,
             _, sums_start, sums_stride) = arguments  # fmt: skip
            channels, height, width, ph, pw, outputs, out_height, out_width = (
                t.scalar(builder, shape_data, index(k)) for k in range(8)
            )
            plane, out_plane = builder.mul(height, width), builder.mul(out_height, out_width)
            image, out_image = builder.mul(channels, plane), builder.mul(outputs, out_plane)
            shift = builder.sub(first_tap, pw)
            columns = [t.lanes(builder, index(0), v * LANES) for v in range(vectors)]
            kept = [t.within(builder, c, index(0), out_width) for c in columns]
            present = [
                t.all_lanes(
                    builder, builder.icmp_signed("<", builder.add(first_output, index(r)), outputs)
                )
                for r in range(rows)
            ]
            grad_masks = [[builder.and_(kept[v], present[r]) for v in range(vectors)]
                          for r in range(rows)]  # fmt: skip
            x_masks = [
                [builder.and_(kept[v], t.within(builder, t.lanes(
                    builder, builder.add(shift, index(j)), v * LANES), index(0), width))
                 for v in range(vectors)]
                for j in range(taps)
            ]  # fmt: skip
            zero = t.splat(builder, t.FLOAT(0.0))

            def sample(n, accumulators):
                x_image = builder.add(builder.mul(n, image), builder.mul(channel, plane))
                grad_image = builder.add(builder.mul(n, out_image),
                                         builder.mul(first_output, out_plane))  # fmt: skip

                def output_row(h, values):
                    row = builder.sub(builder.add(h, kernel_row), ph)
                    inside = builder.and_(builder.icmp_signed(">=", row, index(0)),
                                          builder.icmp_signed("<", row, height))  # fmt: skip

                    def products(sums):
                        x_row = builder.add(x_image, builder.add(builder.mul(row, width), shift))
                        grad_row = builder.add(grad_image, builder.mul(h, out_width))
                        sums = list(sums)
                        for v in range(vectors):
                            inputs = [
                                t.masked_load(builder, x_data,
                                              builder.add(x_row, index(j + v * LANES)),
                                              x_masks[j][v])
                                for j in range(taps)
                            ]  # fmt: skip
                            for r in range(rows):
                                at = builder.add(builder.add(grad_row, builder.mul(
                                    index(r), out_plane)), index(v * LANES))  # fmt: skip
                                g = t.masked_load(builder, grad_data, at, grad_masks[r][v])
                                for j in range(taps):
                                    sums[r * taps + j] = t.fma(builder, g, inputs[j],
                                                               sums[r * taps + j])  # fmt: skip
                        return sums

                    return t.when(builder, inside, values, products)

                return t.loop(builder, index(0), out_height, accumulators, output_row)

            final = t.loop(builder, first_sample, last_sample, [zero] * (rows * taps), sample)
            for r in range(rows):
                for j in range(taps):
                    at = builder.add(sums_start,
                                     builder.add(builder.mul(index(r), sums_stride), index(j)))  # fmt: skip
                    pointer = builder.gep(sums_data, [at])
                    total = builder.fadd(builder.load(pointer),
                                         t.horizontal_sum(builder, final[r * taps + j]))  # fmt: skip
                    builder.store(total, pointer)
            return context.get_dummy_value()

        return signature, codegen

    return keyed(tile, "dot_tile", rows, taps, vectors)


def sum_tile(rows: int, vectors: int):
    """``sum_tile(x, x_start, offsets, first_offset, grad, grad_start, grad_stride, steps, sums,
    sums_start, sums_stride)``.

    For r < rows, v < vectors, lanes l: adds ``sum over s < steps of x[x_start +
    offsets[first_offset + r] + s] * grad[grad_start + s*grad_stride + v*LANES + l]`` to
    ``sums[sums_start + r*sums_stride + v*LANES + l]``: with grad channels-last, the weight
    gradient of ``rows`` taps for ``vectors * LANES`` output channels over one output row.
    """

    @intrinsic
    def tile(typing_context, x, x_start, offsets, first_offset, grad, grad_start, grad_stride,
             steps, sums, sums_start, sums_stride):  # fmt: skip
        signature = types.void(x, x_start, offsets, first_offset, grad, grad_start, grad_stride,
                               steps, sums, sums_start, sums_stride)  # fmt: skip

        def codegen(context, builder, signature, arguments):
            kinds = signature.args
            x_data, offset_data, grad_data, sums_data = (
                t.data(context, builder, kinds[i], arguments[i]) for i in (0, 2, 4, 8)
            )
            (_, x_start, _, first_offset, _, grad_start, grad_stride, steps, _, sums_start,
             sums_stride) = arguments  # fmt: skip
            bases = [
                builder.add(sums_start, builder.mul(index(r), sums_stride)) for r in range(rows)
            ]
            # the row's sums start from zero and are added to ``sums`` at the end: partial sums
            # one output row long keep float32 rounding small (``tile_ir.blocked_sum``)
            start = [ir.Constant(t.VECTOR, None)] * (rows * vectors)
            inputs = [
                builder.add(x_start, t.scalar(builder, offset_data,
                                              builder.add(first_offset, index(r))))
                for r in range(rows)
            ]  # fmt: skip

            def step(s, accumulators):
                grad_base = builder.add(grad_start, builder.mul(s, grad_stride))
                grads = [t.load(builder, grad_data, builder.add(grad_base, index(v * LANES)))
                         for v in range(vectors)]  # fmt: skip
                updated = []
                for r in range(rows):
                    broadcast = t.splat(builder, t.scalar(builder, x_data,
                                                          builder.add(inputs[r], s)))  # fmt: skip
                    updated += [t.fma(builder, broadcast, grads[v], accumulators[r * vectors + v])
                                for v in range(vectors)]  # fmt: skip
                return updated

            final = t.loop(builder, index(0), steps, start, step)
            for r, base in enumerate(bases):
                for v in range(vectors):
                    at = builder.add(base, index(v * LANES))
                    total = builder.fadd(t.load(builder, sums_data, at), final[r * vectors + v])
                    t.store(builder, total, sums_data, at)
            return context.get_dummy_value()

        return signature, codegen

    return keyed(tile, "sum_tile", rows, vectors)
