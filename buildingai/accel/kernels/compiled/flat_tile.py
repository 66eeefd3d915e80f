"""Register tiles for the same-size stride-1 convolution (``compiled/conv.py``): output as large
as the input (``2 * ph == kh - 1``, ``2 * pw == kw - 1``), so that each tap is one shift of the
flat image and its output.

Lanes run over flat positions ``p = h * W + w`` of one image, ``LANES`` at a time: vector ``q``
of a sample covers ``p = q * LANES + lane``, and an image of ``H * W`` positions has ``Q =
ceil(H * W / LANES)`` of them. Unlike a tile of one output row, no lane is spent past the end of
a row (a 28-wide row fills 28 of 32 lanes; 784 positions fill 49 vectors). Which lanes a tap may
read (inside the image once shifted) comes from a table of lane masks built once per geometry
(``compiled/conv._lane_masks``): entry ``q * (kh * kw + 1) + i * kw + j`` holds the lanes of
vector ``q`` that tap (i, j) reads, entry ``q * (kh * kw + 1) + kh * kw`` the lanes that are
positions of the image at all; lane ``l`` is bit ``l`` of an int32.

- ``flat_tile``: the forward correlation: ``rows`` output channels x ``vectors`` vectors, each
  vector any (sample, q) of the batch, so tiles run on across images without waste.
- ``flat_dot_tile``: the weight gradient: ``rows`` output channels x ``taps`` kernel columns of
  one (input channel, kernel row), each accumulator a vector of partial sums over positions,
  its lanes summed and added to the result at the end of a range of samples.
"""

from __future__ import annotations

from numba.core import types
from numba.extending import intrinsic

from . import tile_ir as t
from .disk_cache import keyed
from .tile_ir import LANES, index


def _mask(builder, table, at):
    """The lane mask stored as bits of the int32 ``table[at]``."""
    return t.lane_mask(builder, t.scalar(builder, table, at))


def flat_tile(
    rows: int,
    vectors: int,
    block: int | None,
    channel_major: bool,
    unrolled=None,
    grouped=None,
    skips: bool = False,
):
    """``flat_tile(x, masks, shifts, geometry, first_vector, weights, weight_start, bias, out,
    out_channel, out_rows)``.

    ``geometry`` (int64): channels C, height H, width W, kh, kw, ph, pw, outputs O, vectors per
    image Q, vectors in the batch N*Q, tiles per group (read by the loop), the distance S
    between x's planes, for x (N, C, H, W) with planes S apart (``planes.spaced_planes``) and
    out (N, O, H, W), flat.
    ``shifts`` (int64, kh*kw): ``(i - ph)*W + j - pw`` for tap (i, j). ``weights`` holds, from
    ``weight_start``, ``((c*kh + i)*kw + j)*rows + r`` the tap (c, i, j) of output channel
    ``out_channel + r``. For vectors q = first_vector + v (v < vectors, q < N*Q) of sample n =
    q // Q, positions p = (q % Q)*LANES + lane < H*W, and r < out_rows, stores
    ``bias[out_channel + r] + sum over (c, i, j) of weight * x[n, c, h + i - ph, w + j - pw]``
    (zero outside the image) to ``out[n, out_channel + r, p]``.

    Tap by tap, each over every channel (``block`` channels at a time, ``tile_ir.blocked_sum``),
    where the tile's input of every channel stays in the L1 cache; else, ``channel_major``,
    channel by channel, each with its taps (``block`` channels of taps at a time): a channel's
    input stays in cache for its taps. With ``grouped``, tap by tap over ``grouped`` channels,
    then over the next ``grouped`` (each tap's sum over a group from zero): one group's input
    stays in L1 where every channel's would not. With ``unrolled`` (C itself), each tap's
    channels are unrolled instead of looped: with few channels (an image's 3) the loop's own
    steps outweighed its multiply-adds (unrolling the taps as well measured slower). With
    ``skips``, a tap whose masks keep no lane of any of the tile's vectors is not multiplied at
    all (the sample-lane layout of ``sample_lanes.py``, where a tap reads all lanes or none).
    """

    @intrinsic
    def tile(typing_context, x, masks, shifts, geometry, first_vector, weights, weight_start,
             bias, out, out_channel, out_rows):  # fmt: skip
        signature = types.void(x, masks, shifts, geometry, first_vector, weights, weight_start,
                               bias, out, out_channel, out_rows)  # fmt: skip

        def codegen(context, builder, signature, arguments):
            kinds = signature.args
            x_data, mask_data, shift_data, shape_data, weight_data, bias_data, out_data = (
                t.data(context, builder, kinds[i], arguments[i]) for i in (0, 1, 2, 3, 5, 7, 8)
            )
            first_vector, weight_start, out_channel, out_rows = (
                arguments[i] for i in (4, 6, 9, 10)
            )
            channels, height, width, kh, kw, _, _, outputs, per_image, total = (
                t.scalar(builder, shape_data, index(k)) for k in range(10)
            )
            plane = builder.mul(height, width)
            x_plane = t.scalar(builder, shape_data, index(11))
            image = builder.mul(channels, x_plane)
            taps = builder.mul(kh, kw)
            entries = builder.add(taps, index(1))  # mask table entries per vector
            channel_stride = builder.mul(taps, index(rows))  # between a channel's weights
            # each vector's sample, first position and row of the mask table; a vector past the
            # batch reads the tile's first vector again and writes nothing
            present, x_bases, mask_rows, out_bases = [], [], [], []
            for v in range(vectors):
                q = builder.add(first_vector, index(v))
                inside = builder.icmp_signed("<", q, total)
                q = builder.select(inside, q, first_vector)
                sample, local = builder.sdiv(q, per_image), builder.srem(q, per_image)
                position = builder.mul(local, index(LANES))
                present.append(inside)
                x_bases.append(builder.add(builder.mul(sample, image), position))
                mask_rows.append(builder.mul(local, entries))
                out_image = builder.mul(builder.add(builder.mul(sample, outputs), out_channel),
                                        plane)  # fmt: skip
                out_bases.append(builder.add(out_image, position))
            start = []
            for r in range(rows):
                value = t.scalar(builder, bias_data, builder.add(out_channel, index(r)))
                start += [t.splat(builder, value)] * vectors

            def step(reads, weight_row, lane_masks, sums):
                """One channel and tap: ``rows`` broadcast weights times ``vectors`` inputs."""
                inputs = [
                    t.masked_load(builder, x_data, reads[v], lane_masks[v]) for v in range(vectors)
                ]
                updated = []
                for r in range(rows):
                    weight = t.scalar(builder, weight_data, builder.add(weight_row, index(r)))
                    broadcast = t.splat(builder, weight)
                    updated += [
                        t.fma(builder, broadcast, inputs[v], sums[r * vectors + v])
                        for v in range(vectors)
                    ]
                return updated

            def reads_some(k):
                """i1: whether tap k's masks keep a lane of some vector of the tile."""
                bits = t.scalar(builder, mask_data, builder.add(mask_rows[0], k))
                for v in range(1, vectors):
                    more = t.scalar(builder, mask_data, builder.add(mask_rows[v], k))
                    bits = builder.or_(bits, more)
                return builder.icmp_signed("!=", bits, bits.type(0))

            def skipping(k, accumulators, body):
                """``body(accumulators)``, or with ``skips`` only where tap k reads some lane."""
                if not skips:
                    return body(accumulators)
                return t.when(builder, reads_some(k), accumulators, body)

            def tap_reads(k):
                """(shift, lane masks) of tap k: how far from each position it reads, and which
                lanes of each vector it may read."""
                lane_masks = [
                    _mask(builder, mask_data, builder.add(mask_rows[v], k)) for v in range(vectors)
                ]
                return t.scalar(builder, shift_data, k), lane_masks

            def taps_over(low, high):
                """Tap k over the channels [low, high): the masks and shifts loaded once per
                tap."""

                def tap_major(k, accumulators):
                    shift, lane_masks = tap_reads(k)
                    weight_tap = builder.add(weight_start, builder.mul(k, index(rows)))

                    def channel(c, sums):
                        at = builder.add(shift, builder.mul(c, x_plane))
                        reads = [builder.add(x_bases[v], at) for v in range(vectors)]
                        weight_row = builder.add(weight_tap, builder.mul(c, channel_stride))
                        return step(reads, weight_row, lane_masks, sums)

                    def channels(accumulators):
                        if unrolled is not None:
                            for c in range(unrolled):
                                accumulators = channel(index(c), accumulators)
                            return accumulators
                        if grouped is not None:  # the group's channels summed from zero
                            return t.blocked_sum(builder, low, high, grouped, accumulators, channel)
                        if block is None:
                            return t.loop(builder, low, high, accumulators, channel)
                        return t.blocked_sum(builder, low, high, block, accumulators, channel)

                    return skipping(k, accumulators, channels)

                return tap_major

            def group(g, totals):
                low = builder.mul(g, index(grouped))
                high = builder.add(low, index(grouped))
                high = builder.select(builder.icmp_signed("<", high, channels), high, channels)
                return t.loop(builder, index(0), taps, totals, taps_over(low, high))

            def channel(c, accumulators):
                reads = [builder.add(x_bases[v], builder.mul(c, x_plane)) for v in range(vectors)]
                weight_channel = builder.add(weight_start, builder.mul(c, channel_stride))

                def tap(k, sums):
                    shift, lane_masks = tap_reads(k)
                    weight_row = builder.add(weight_channel, builder.mul(k, index(rows)))
                    return skipping(
                        k,
                        sums,
                        lambda sums: step(
                            [builder.add(r, shift) for r in reads], weight_row, lane_masks, sums
                        ),
                    )

                return t.loop(builder, index(0), taps, accumulators, tap)

            if grouped is not None:
                groups = builder.sdiv(builder.add(channels, index(grouped - 1)), index(grouped))
                final = t.loop(builder, index(0), groups, start, group)
            elif not channel_major:
                final = t.loop(builder, index(0), taps, start, taps_over(index(0), channels))
            elif block is None:
                final = t.loop(builder, index(0), channels, start, channel)
            else:
                final = t.blocked_sum(builder, index(0), channels, block, start, channel)
            for v in range(vectors):
                bits = t.scalar(builder, mask_data, builder.add(mask_rows[v], taps))
                valid = t.lane_mask(builder, bits)
                for r in range(rows):
                    kept = builder.and_(present[v], builder.icmp_signed("<", index(r), out_rows))
                    mask = builder.and_(valid, t.all_lanes(builder, kept))
                    whole = builder.and_(kept, t.every_lane(builder, bits))
                    at = builder.add(out_bases[v], builder.mul(index(r), plane))
                    t.store_kept(builder, final[r * vectors + v], out_data, at, mask, whole)
            return context.get_dummy_value()

        return signature, codegen

    return keyed(tile, "flat_tile", rows, vectors, block, channel_major, unrolled, grouped, skips)


def flat_dot_tile(rows: int, taps: int):
    """``flat_dot_tile(x, grad, masks, geometry, first_sample, last_sample, channel,
    kernel_row, first_tap, first_output, sums, sums_start, sums_stride)``.

    ``geometry`` (int64) as ``flat_tile``'s, for x (N, C, H, W) and grad (N, O, H, W), flat. For
    r < rows, j < taps, adds lane by lane ``sum over samples n in [first_sample, last_sample)
    and vectors q < Q of grad[n, first_output + r, p] * x[n, channel, h + kernel_row - ph, w +
    first_tap + j - pw]`` (p = q*LANES + lane; zero outside the image, past H*W and for r
    past O; first_tap + taps <= kw), its lanes summed, to ``sums[sums_start + r*sums_stride +
    j]``.
    """

    @intrinsic
    def tile(typing_context, x, grad, masks, geometry, first_sample, last_sample, channel,
             kernel_row, first_tap, first_output, sums, sums_start, sums_stride):  # fmt: skip
        signature = types.void(x, grad, masks, geometry, first_sample, last_sample, channel,
                               kernel_row, first_tap, first_output, sums, sums_start,
                               sums_stride)  # fmt: skip

        def codegen(context, builder, signature, arguments):
            kinds = signature.args
            x_data, grad_data, mask_data, shape_data, sums_data = (
                t.data(context, builder, kinds[i], arguments[i]) for i in (0, 1, 2, 3, 10)
            )
            (first_sample, last_sample, channel, kernel_row, first_tap, first_output,
             sums_start, sums_stride) = (arguments[i] for i in (4, 5, 6, 7, 8, 9, 11, 12))  # fmt: skip
            channels, height, width, kh, kw, ph, pw, outputs, per_image = (
                t.scalar(builder, shape_data, index(k)) for k in range(9)
            )
            plane = builder.mul(height, width)
            image = builder.mul(channels, plane)
            out_image = builder.mul(outputs, plane)
            whole_vectors = builder.sdiv(plane, index(LANES))
            entries = builder.add(builder.mul(kh, kw), index(1))
            row_shift = builder.mul(builder.sub(kernel_row, ph), width)
            # Rows past O read the last output channel instead: their sums land in entries of
            # ``sums`` that are thrown away, and no lane needs a mask of its own for them. The
            # taps of a tile are neighbours (constant offsets from one address each).
            last_output = builder.sub(outputs, index(1))
            shift = builder.add(row_shift, builder.sub(first_tap, pw))
            tap_entry = builder.add(builder.mul(kernel_row, kw), first_tap)
            grad_rows = []
            for r in range(rows):
                output = builder.add(first_output, index(r))
                output = builder.select(builder.icmp_signed("<", output, outputs), output,
                                        last_output)  # fmt: skip
                grad_rows.append(builder.mul(builder.sub(output, first_output), plane))
            zero = t.splat(builder, t.FLOAT(0.0))

            def sample(n, accumulators):
                x_image = builder.add(builder.mul(n, image), builder.mul(channel, plane))
                grad_image = builder.add(builder.mul(n, out_image),
                                         builder.mul(first_output, plane))  # fmt: skip

                def vector(q, sums, whole):
                    position = builder.mul(q, index(LANES))
                    mask_row = builder.mul(q, entries)
                    x_at = builder.add(builder.add(x_image, position), shift)
                    mask_at = builder.add(mask_row, tap_entry)
                    inputs = []
                    for j in range(taps):
                        lane_mask = _mask(builder, mask_data, builder.add(mask_at, index(j)))
                        inputs.append(t.masked_load(builder, x_data,
                                                    builder.add(x_at, index(j)), lane_mask))  # fmt: skip
                    grad_at = builder.add(grad_image, position)
                    sums = list(sums)
                    if not whole:
                        valid = _mask(builder, mask_data, builder.add(mask_row, builder.sub(
                            entries, index(1))))  # fmt: skip
                    for r in range(rows):
                        at = builder.add(grad_at, grad_rows[r])
                        if whole:
                            g = t.load(builder, grad_data, at)
                        else:
                            g = t.masked_load(builder, grad_data, at, valid)
                        for j in range(taps):
                            sums[r * taps + j] = t.fma(builder, g, inputs[j], sums[r * taps + j])
                    return sums

                # vectors wholly inside the image read the gradient without a mask; the last
                # one, where the image ends inside it, with one
                sums = t.loop(builder, index(0), whole_vectors, accumulators,
                              lambda q, values: vector(q, values, True))  # fmt: skip
                return t.loop(builder, whole_vectors, per_image, sums,
                              lambda q, values: vector(q, values, False))  # fmt: skip

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

    return keyed(tile, "flat_dot_tile", rows, taps)
