"""Register tiles for the direct convolution (``compiled/conv.py``), written as LLVM IR for the
CPU's vector width.

A register tile keeps ``rows x vectors`` accumulators, each a vector of ``LANES`` float32 values,
in registers for a whole loop of multiply-adds: at each step it loads ``vectors`` vectors, one
scalar per row, and does ``rows * vectors`` fused multiply-adds (scalar broadcast times vector).
This is the inner kernel of a GEMM; numba's loops do not keep that many accumulators in
registers, so each tile is emitted here as a numba intrinsic whose IR holds them as SSA values.

Two tiles, both ``acc[r][v] += scalar(step, r) * vector(step, v)``:

- ``bias_tile`` (forward correlation): the scalars are a weight matrix's row ``step``
  (consecutive output channels), the vectors a shifted input row read at ``offsets[step]``; the
  accumulators start at the bias and end in the output, masked to the rows and columns that
  exist.
- ``sum_tile`` (weight gradient): the scalars are input values at ``offsets[r] + step``, the
  vectors a row of the channels-last output gradient; the accumulators are loaded from and
  stored back to a partial sum in memory.

Vector loads and stores need no alignment. Lanes past the end of an output row read whatever
lies there (the callers make those addresses valid) and are never stored.
"""

from __future__ import annotations

from llvmlite import binding, ir
from numba.core import cgutils, types
from numba.extending import intrinsic

LANES = 16 if binding.get_host_cpu_features().get("avx512f") else 8

_I1, _I32, _I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
_F32 = ir.FloatType()
_VECTOR = ir.VectorType(_F32, LANES)
_INDEX_VECTOR = ir.VectorType(_I64, LANES)
_MASK = ir.VectorType(_I1, LANES)


def _pointer(context, builder, array_type, array):
    """The data pointer of a numba array value."""
    return cgutils.create_struct_proxy(array_type)(context, builder, value=array).data


def _index(value: int):
    return ir.Constant(_I64, value)


def _splat(builder, scalar, vector_type):
    """``scalar`` in every lane."""
    undefined = ir.Constant(vector_type, ir.Undefined)
    first = builder.insert_element(undefined, scalar, ir.Constant(_I32, 0))
    return builder.shuffle_vector(first, undefined, ir.Constant(ir.VectorType(_I32, LANES), None))


def _vector_at(builder, base, index):
    """A pointer to the vector starting at ``base[index]``."""
    return builder.bitcast(builder.gep(base, [index]), _VECTOR.as_pointer())


def _load_vector(builder, base, index):
    return builder.load(_vector_at(builder, base, index), align=4)


def _fma(builder):
    name = f"llvm.fma.v{LANES}f32"
    return cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(_VECTOR, [_VECTOR] * 3), name
    )


def _masked_store(builder):
    signature = ir.FunctionType(ir.VoidType(), [_VECTOR, _VECTOR.as_pointer(), _I32, _MASK])
    name = f"llvm.masked.store.v{LANES}f32.p0"
    return cgutils.get_or_insert_function(builder.module, signature, name)


def _step_loop(builder, steps, start, body):
    """Emit ``for step in range(steps)`` carrying the accumulators ``start`` (a list of rows of
    vectors) through ``body(step, accumulators) -> accumulators``; returns the final ones. The
    loop is skipped when ``steps`` is 0."""
    entry = builder.basic_block
    loop = builder.append_basic_block("tile_steps")
    done = builder.append_basic_block("tile_done")
    builder.cbranch(builder.icmp_signed(">", steps, _index(0)), loop, done)
    builder.position_at_end(loop)
    step = builder.phi(_I64)
    step.add_incoming(_index(0), entry)
    carried = [[builder.phi(_VECTOR) for _ in row] for row in start]
    for phis, values in zip(carried, start):
        for phi, value in zip(phis, values):
            phi.add_incoming(value, entry)
    updated = body(step, carried)
    following = builder.add(step, _index(1))
    tail = builder.basic_block
    step.add_incoming(following, tail)
    for phis, values in zip(carried, updated):
        for phi, value in zip(phis, values):
            phi.add_incoming(value, tail)
    builder.cbranch(builder.icmp_signed("<", following, steps), loop, done)
    builder.position_at_end(done)
    final = []
    for values, initial in zip(updated, start):
        row = []
        for value, first in zip(values, initial):
            merged = builder.phi(_VECTOR)
            merged.add_incoming(first, entry)
            merged.add_incoming(value, tail)
            row.append(merged)
        final.append(row)
    return final


def _masked_load(builder):
    signature = ir.FunctionType(_VECTOR, [_VECTOR.as_pointer(), _I32, _MASK, _VECTOR])
    name = f"llvm.masked.load.v{LANES}f32.p0"
    return cgutils.get_or_insert_function(builder.module, signature, name)


def _lanes(builder, first, v: int):
    """The int64 vector first + v*LANES + (0, 1, ..., LANES - 1)."""
    lane = ir.Constant(_INDEX_VECTOR, [v * LANES + lane for lane in range(LANES)])
    return builder.add(_splat(builder, first, _INDEX_VECTOR), lane)


def _count_loop(builder, first, last, body):
    """Emit ``for value in range(first, last + 1): body(value)`` (int64, at least once)."""
    entry = builder.basic_block
    loop = builder.append_basic_block("tile_rows")
    done = builder.append_basic_block("tile_rows_done")
    builder.branch(loop)
    builder.position_at_end(loop)
    value = builder.phi(_I64)
    value.add_incoming(first, entry)
    body(value)
    following = builder.add(value, _index(1))
    value.add_incoming(following, builder.basic_block)
    builder.cbranch(builder.icmp_signed("<=", following, last), loop, done)
    builder.position_at_end(done)


def grid_tile(rows: int, vectors: int):
    """The forward tile, over the flat grid of one image, as a numba intrinsic::

        grid_tile(x, x_start, offsets, first, limit, weights, weight_start, weight_stride,
                  bias, out, out_start, out_plane, out_rows, width, out_width)

    Grid position p is row p // width, column p % width of the output, computed as if the
    output were ``width`` wide (the input's width): tap k of position p reads
    ``x[x_start + offsets[k] + p]``. The tile covers p = first + v*LANES + l for v < vectors,
    lanes l, reading only where p < limit. For r < rows it stores ``bias[weight_start + r] +
    sum over k of weights[weight_start + k*weight_stride + r] * x[...]`` to ``out[out_start +
    r*out_plane + (p // width) * out_width + p % width]`` where r < out_rows, p < limit and
    p % width < out_width. ``x``, ``weights``, ``bias``, ``out``: float32 1-D; ``offsets``:
    int64 1-D; the rest int64.
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
                _pointer(context, builder, kinds[i], arguments[i]) for i in (0, 2, 5, 8, 9)
            )
            (_, x_start, offsets, first, limit, _, weight_start, weight_stride, _, _, out_start,
             out_plane, out_rows, width, out_width) = arguments  # fmt: skip
            steps = cgutils.create_struct_proxy(kinds[2])(context, builder, value=offsets)
            steps = builder.extract_value(steps.shape, 0)
            fma, load = _fma(builder), _masked_load(builder)
            positions = [_lanes(builder, first, v) for v in range(vectors)]
            limits = _splat(builder, limit, _INDEX_VECTOR)
            readable = [builder.icmp_signed("<", p, limits) for p in positions]
            zero = ir.Constant(_VECTOR, None)
            start = []
            for r in range(rows):
                value = builder.load(builder.gep(bias_data, [builder.add(weight_start, _index(r))]))
                start.append([_splat(builder, value, _VECTOR)] * vectors)

            def body(step, accumulators):
                base = builder.add(x_start, builder.load(builder.gep(offset_data, [step])))
                inputs = []
                for v in range(vectors):
                    at = _vector_at(builder, x_data, builder.add(base, _index(v * LANES)))
                    inputs.append(builder.call(load, [at, ir.Constant(_I32, 4), readable[v], zero]))
                row_start = builder.add(weight_start, builder.mul(step, weight_stride))
                updated = []
                for r, row in enumerate(accumulators):
                    weight = builder.gep(weight_data, [builder.add(row_start, _index(r))])
                    scalar = _splat(builder, builder.load(weight), _VECTOR)
                    updated.append(
                        [builder.call(fma, [scalar, inputs[v], row[v]]) for v in range(vectors)]
                    )
                return updated

            final = _step_loop(builder, steps, start, body)
            store = _masked_store(builder)
            last = builder.sub(builder.add(first, _index(vectors * LANES - 1)), _index(0))
            first_row = builder.sdiv(first, width)
            last_row = builder.sdiv(last, width)

            def store_row(line):
                line_start = builder.mul(line, width)
                begin = _splat(builder, line_start, _INDEX_VECTOR)
                end = _splat(builder, builder.add(line_start, out_width), _INDEX_VECTOR)
                # lane p of this output row lands at out[... + line*out_width + p - line*width]
                shift = builder.sub(builder.mul(line, out_width), line_start)
                for v in range(vectors):
                    inside = builder.and_(
                        builder.icmp_signed(">=", positions[v], begin),
                        builder.icmp_signed("<", positions[v], end),
                    )
                    inside = builder.and_(inside, readable[v])
                    lane_start = builder.add(builder.add(first, _index(v * LANES)), shift)
                    for r, row in enumerate(final):
                        present = _splat(
                            builder, builder.icmp_signed("<", _index(r), out_rows), _MASK
                        )
                        at = builder.add(
                            builder.add(out_start, builder.mul(_index(r), out_plane)), lane_start
                        )
                        target = _vector_at(builder, out_data, at)
                        builder.call(
                            store,
                            [row[v], target, ir.Constant(_I32, 4), builder.and_(inside, present)],
                        )

            _count_loop(builder, first_row, last_row, store_row)
            return context.get_dummy_value()

        return signature, codegen

    return tile


def sum_tile(rows: int, vectors: int):
    """The weight-gradient tile, as a numba intrinsic::

        sum_tile(x, x_start, offsets, first_offset, grad, grad_start, grad_stride, steps,
                 sums, sums_start, sums_stride)

    For r < rows, v < vectors, lanes l: ``sums[sums_start + r*sums_stride + v*LANES + l] +=
    sum over s < steps of x[x_start + offsets[first_offset + r] + s] *
    grad[grad_start + s*grad_stride + v*LANES + l]``. ``x``, ``grad``, ``sums``: float32 1-D;
    ``offsets``: int64 1-D; the rest int64.
    """

    @intrinsic
    def tile(typing_context, x, x_start, offsets, first_offset, grad, grad_start, grad_stride,
             steps, sums, sums_start, sums_stride):  # fmt: skip
        signature = types.void(x, x_start, offsets, first_offset, grad, grad_start, grad_stride,
                               steps, sums, sums_start, sums_stride)  # fmt: skip

        def codegen(context, builder, signature, arguments):
            kinds = signature.args
            x_data, offset_data, grad_data, sums_data = (
                _pointer(context, builder, kinds[i], arguments[i]) for i in (0, 2, 4, 8)
            )
            _, x_start, _, first, _, grad_start, grad_stride, steps, _, sums_start, stride = (
                arguments
            )
            fma = _fma(builder)
            row_bases = [
                builder.add(sums_start, builder.mul(_index(r), stride)) for r in range(rows)
            ]
            start = [
                [
                    _load_vector(builder, sums_data, builder.add(base, _index(v * LANES)))
                    for v in range(vectors)
                ]
                for base in row_bases
            ]
            inputs = []
            for r in range(rows):
                offset = builder.load(builder.gep(offset_data, [builder.add(first, _index(r))]))
                inputs.append(builder.add(x_start, offset))

            def body(step, accumulators):
                grad_base = builder.add(grad_start, builder.mul(step, grad_stride))
                grads = [
                    _load_vector(builder, grad_data, builder.add(grad_base, _index(v * LANES)))
                    for v in range(vectors)
                ]
                updated = []
                for r, row in enumerate(accumulators):
                    value = builder.load(builder.gep(x_data, [builder.add(inputs[r], step)]))
                    scalar = _splat(builder, value, _VECTOR)
                    updated.append(
                        [builder.call(fma, [scalar, grads[v], row[v]]) for v in range(vectors)]
                    )
                return updated

            final = _step_loop(builder, steps, start, body)
            for base, row in zip(row_bases, final):
                for v, value in enumerate(row):
                    target = _vector_at(builder, sums_data, builder.add(base, _index(v * LANES)))
                    builder.store(value, target, align=4)
            return context.get_dummy_value()

        return signature, codegen

    return tile
