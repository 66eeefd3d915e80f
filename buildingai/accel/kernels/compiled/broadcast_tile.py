"""The register tile of the channel-vector convolution (``compiled/conv_broadcast.py``): lanes
over output channels, each input value broadcast.

The flat tiles (``flat_tile.py``) put output positions in the lanes and broadcast a weight;
every step then loads input vectors at a tap's shift, unaligned and masked at the image's
edges. Here the roles turn: a step loads ``vectors`` vectors of one tap's weights for
``vectors * LANES`` output channels (contiguous, packed by ``planes.pack_weights``) and
broadcasts one input value per output position, read from a zero-padded copy of the input, so
that no lane needs a mask. The output positions of a tile need not be neighbours: each has its
own start in the input (a table of them), so a tile runs across row ends without waste.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from . import tile_ir as t
from .disk_cache import keyed
from .tile_ir import LANES, index


def broadcast_tile(positions: int, vectors: int, block: int | None, rectify: bool = False):
    """``broadcast_tile(x, image, starts, first, offsets, weights, weight_start, bias, channel,
    out, outputs, places, out_plane, out_rows)``.

    ``positions`` output positions q = first + k (k < positions) of the batch, flat (q =
    sample * P + local, P = len(starts) positions an image), x ``vectors * LANES`` output
    channels ``channel + r``. Position q reads the input from ``x[sample * image +
    starts[local]]``; tap k (of T = len(offsets)) from ``offsets[k]`` further on. ``weights``
    holds from ``weight_start``, at ``k * vectors * LANES + r``, tap k of output channel
    ``channel + r``. For r < out_rows, stores ``bias[channel + r] + sum over k of weight *
    x[...]`` to ``out[(sample * outputs + channel + r) * out_plane + places[local]]``. With a
    ``block``, the taps are summed ``block`` at a time (``tile_ir.blocked_sum``). x, weights,
    bias, out: float32 1-D (bias at least ``channel + vectors * LANES`` long); starts, offsets,
    places: int64 1-D; the rest int64; ``P >= positions``. With ``rectify``, each sum is stored
    as max(sum, 0) (``tile_ir.rectified``).
    """
    rows = vectors * LANES

    @intrinsic
    def tile(typing_context, x, image, starts, first, offsets, weights, weight_start, bias,
             channel, out, outputs, places, out_plane, out_rows):  # fmt: skip
        signature = types.void(x, image, starts, first, offsets, weights, weight_start, bias,
                               channel, out, outputs, places, out_plane, out_rows)  # fmt: skip

        def codegen(context, builder, signature, arguments):
            kinds = signature.args
            x_data, start_data, offset_data, weight_data, bias_data, out_data, place_data = (
                t.data(context, builder, kinds[i], arguments[i]) for i in (0, 2, 4, 5, 7, 9, 11)
            )
            (_, image, _, first, _, _, weight_start, _, channel, _, outputs, _, out_plane,
             out_rows) = arguments  # fmt: skip
            taps = t.length(context, builder, kinds[4], arguments[4])
            plane = t.length(context, builder, kinds[2], arguments[2])
            # each position's sample and place in it: one division, then at most one step
            # into the next sample (a sample holds at least ``positions``)
            sample, local = builder.sdiv(first, plane), builder.srem(first, plane)
            reads, writes = [], []
            for k in range(positions):
                at = builder.add(local, index(k))
                past = builder.icmp_signed(">=", at, plane)
                at = builder.select(past, builder.sub(at, plane), at)
                owner = builder.add(sample, builder.zext(past, t.I64))
                read = t.scalar(builder, start_data, at)
                reads.append(builder.add(builder.mul(owner, image), read))
                out_start = builder.add(builder.mul(owner, outputs), channel)
                place = t.scalar(builder, place_data, at)
                writes.append(builder.add(builder.mul(out_start, out_plane), place))

            def step(k, sums):
                """Tap k: ``vectors`` weight vectors times one broadcast value per position."""
                offset = t.scalar(builder, offset_data, k)
                row = builder.add(weight_start, builder.mul(k, index(rows)))
                loaded = [
                    t.load(builder, weight_data, builder.add(row, index(v * LANES)))
                    for v in range(vectors)
                ]
                updated = []
                for p in range(positions):
                    value = t.scalar(builder, x_data, builder.add(reads[p], offset))
                    broadcast = t.splat(builder, value)
                    updated += [
                        t.fma(builder, broadcast, loaded[v], sums[p * vectors + v])
                        for v in range(vectors)
                    ]
                return updated

            start = []
            for _ in range(positions):
                start += [
                    t.load(builder, bias_data, builder.add(channel, index(v * LANES)))
                    for v in range(vectors)
                ]
            if block is None:
                final = t.loop(builder, index(0), taps, start, step)
            else:
                final = t.blocked_sum(builder, index(0), taps, block, start, step)
            if rectify:
                final = [t.rectified(builder, value) for value in final]
            # each lane is one output channel's value: stored one by one, down its plane
            for v in range(vectors):
                for lane in range(LANES):
                    r = v * LANES + lane
                    with builder.if_then(builder.icmp_signed("<", index(r), out_rows)):
                        down = builder.mul(index(r), out_plane)
                        for p in range(positions):
                            value = builder.extract_element(
                                final[p * vectors + v], ir.Constant(t.I32, lane)
                            )
                            at = builder.add(writes[p], down)
                            builder.store(value, builder.gep(out_data, [at]))
            return context.get_dummy_value()

        return signature, codegen

    return keyed(tile, "broadcast_tile", positions, vectors, block, rectify)
