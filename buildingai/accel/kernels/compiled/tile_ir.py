"""LLVM IR building blocks for the register tiles of ``register_tile.py``: vector types of the
CPU's width, masked loads and stores, broadcasts, and loops and branches that carry a list of
accumulator vectors as SSA values (so that LLVM keeps them in registers).

Every function takes the ``llvmlite.ir.IRBuilder`` a numba intrinsic's code generator is given.
Indices are int64 values (``index(k)`` for a constant).
"""

from __future__ import annotations

import os

from llvmlite import binding, ir
from numba.core import cgutils

LANES_VARIABLE = "BUILDINGAI_VECTOR_LANES"  # 8 or 16 before import: another vector width


def _lanes_for_this_cpu() -> int:
    """16 float32 lanes (AVX-512) where the CPU has them, else 8 (AVX2), unless
    ``BUILDINGAI_VECTOR_LANES`` says 8 (AVX2 tiles on an AVX-512 CPU, to compare or test)."""
    chosen = os.environ.get(LANES_VARIABLE)
    if chosen is not None:
        if chosen not in ("8", "16"):
            raise ValueError(f"{LANES_VARIABLE} must be 8 or 16, got {chosen!r}")
        return int(chosen)
    return 16 if binding.get_host_cpu_features().get("avx512f") else 8


LANES = _lanes_for_this_cpu()

I1, I32, I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
FLOAT = ir.FloatType()
VECTOR = ir.VectorType(FLOAT, LANES)
INDICES = ir.VectorType(I64, LANES)
MASK = ir.VectorType(I1, LANES)
_ALIGN = ir.Constant(I32, 4)  # float32 alignment: no vector access needs more
# An AVX2 lane mask: each lane's sign bit. A mask of i1 lanes (``MASK``) kept across a loop
# costs a shift per use on AVX2; this form goes to the masked load as it is. It must not be
# made by sign-extending i1 lanes: LLVM then turns the load back into the generic one.
SIGNS = ir.VectorType(I32, LANES)


def index(value: int):
    return ir.Constant(I64, value)


def data(context, builder, array_type, array):
    """The data pointer of a numba array value."""
    return cgutils.create_struct_proxy(array_type)(context, builder, value=array).data


def length(context, builder, array_type, array):
    """The first extent of a numba array value."""
    proxy = cgutils.create_struct_proxy(array_type)(context, builder, value=array)
    return builder.extract_value(proxy.shape, 0)


def splat(builder, scalar, vector_type=VECTOR):
    """``scalar`` in every lane."""
    undefined = ir.Constant(vector_type, ir.Undefined)
    first = builder.insert_element(undefined, scalar, ir.Constant(I32, 0))
    return builder.shuffle_vector(first, undefined, ir.Constant(ir.VectorType(I32, LANES), None))


def lanes(builder, first, offset: int = 0):
    """The int64 vector ``first + offset + (0, 1, ..., LANES - 1)``."""
    steps = ir.Constant(INDICES, [offset + lane for lane in range(LANES)])
    return builder.add(splat(builder, first, INDICES), steps)


def within(builder, values, low, high):
    """The lanes of ``values`` (int64 vector) in ``[low, high)`` (int64 scalars), as a lane
    mask: ``SIGNS`` on AVX2, else ``MASK``. On AVX2, a lane is inside where neither ``values -
    low`` nor ``high - 1 - values`` is negative: the sign of their bitwise or, taken in 32 bits
    (the values are positions in one image, far inside 2**31)."""
    if LANES == 8:
        below = builder.sub(values, splat(builder, low, INDICES))
        above = builder.sub(splat(builder, builder.sub(high, index(1)), INDICES), values)
        outside = builder.trunc(builder.or_(below, above), SIGNS)
        return builder.xor(outside, ir.Constant(SIGNS, [-1] * LANES))
    above = builder.icmp_signed(">=", values, splat(builder, low, INDICES))
    return builder.and_(above, builder.icmp_signed("<", values, splat(builder, high, INDICES)))


def all_lanes(builder, flag):
    """Every lane where the i1 ``flag`` holds, else none: a lane mask of ``within``'s form."""
    if LANES == 8:
        return splat(builder, builder.sext(flag, I32), SIGNS)
    return splat(builder, flag, MASK)


def load(builder, base, at):
    """The vector starting at ``base[at]`` (``base`` a float pointer)."""
    pointer = builder.bitcast(builder.gep(base, [at]), VECTOR.as_pointer())
    return builder.load(pointer, align=4)


def store(builder, value, base, at):
    """Store the vector ``value`` at ``base[at]``."""
    pointer = builder.bitcast(builder.gep(base, [at]), VECTOR.as_pointer())
    builder.store(value, pointer, align=4)


def scalar(builder, base, at):
    return builder.load(builder.gep(base, [at]))


def lane_mask(builder, bits):
    """The lanes whose bit is set in the int32 ``bits`` (lane ``l``: bit ``l``), as a lane mask
    of ``within``'s form (on AVX2 each bit shifted into its lane's sign)."""
    if LANES == 8:
        shifts = ir.Constant(SIGNS, [31 - lane for lane in range(LANES)])
        return builder.shl(splat(builder, bits, SIGNS), shifts)
    return builder.bitcast(builder.trunc(bits, ir.IntType(LANES)), MASK)


def every_lane(builder, bits):
    """Whether the int32 ``bits`` (``lane_mask``'s) has the bit of every lane set, as an i1."""
    return builder.icmp_signed("==", bits, ir.Constant(I32, (1 << LANES) - 1))


def masked_load(builder, base, at, mask):
    """The vector at ``base[at]``, zero in the lanes the lane mask ``mask`` (``within``)
    leaves out (not read)."""
    pointer = builder.bitcast(builder.gep(base, [at]), VECTOR.as_pointer())
    if mask.type == SIGNS:
        signature = ir.FunctionType(VECTOR, [VECTOR.as_pointer(), SIGNS])
        function = cgutils.get_or_insert_function(
            builder.module, signature, "llvm.x86.avx.maskload.ps.256"
        )
        return builder.call(function, [pointer, mask])
    signature = ir.FunctionType(VECTOR, [VECTOR.as_pointer(), I32, MASK, VECTOR])
    function = cgutils.get_or_insert_function(
        builder.module, signature, f"llvm.masked.load.v{LANES}f32.p0"
    )
    return builder.call(function, [pointer, _ALIGN, mask, ir.Constant(VECTOR, None)])


def masked_store(builder, value, base, at, mask):
    """Store the lanes of ``value`` that the lane mask ``mask`` (``within``) keeps at
    ``base[at + lane]``."""
    pointer = builder.bitcast(builder.gep(base, [at]), VECTOR.as_pointer())
    if mask.type == SIGNS:
        signature = ir.FunctionType(ir.VoidType(), [VECTOR.as_pointer(), SIGNS, VECTOR])
        function = cgutils.get_or_insert_function(
            builder.module, signature, "llvm.x86.avx.maskstore.ps.256"
        )
        builder.call(function, [pointer, mask, value])
        return
    signature = ir.FunctionType(ir.VoidType(), [VECTOR, VECTOR.as_pointer(), I32, MASK])
    function = cgutils.get_or_insert_function(
        builder.module, signature, f"llvm.masked.store.v{LANES}f32.p0"
    )
    builder.call(function, [value, pointer, _ALIGN, mask])


def store_kept(builder, value, base, at, mask, whole):
    """``masked_store``, as a plain store where the i1 ``whole`` says ``mask`` keeps every lane.
    AVX2's masked store is microcoded on AMD's cores (Agner Fog's instruction tables); the
    tiles store most vectors whole and mask only those at an edge."""
    with builder.if_else(whole) as (then, otherwise):
        with then:
            store(builder, value, base, at)
        with otherwise:
            masked_store(builder, value, base, at, mask)


def fma(builder, a, b, c):
    """``a * b + c`` lane by lane, rounded once."""
    signature = ir.FunctionType(VECTOR, [VECTOR] * 3)
    function = cgutils.get_or_insert_function(builder.module, signature, f"llvm.fma.v{LANES}f32")
    return builder.call(function, [a, b, c])


def rectified(builder, vector):
    """max(vector, 0) lane by lane, as the ReLU twin computes it: a lane at most 0 becomes +0,
    a NaN stays NaN (an ordered comparison is false for it)."""
    zero = ir.Constant(vector.type, None)
    return builder.select(builder.fcmp_ordered("<=", vector, zero), zero, vector)


def horizontal_sum(builder, vector):
    """The sum of a vector's lanes, as a tree of halves (a fixed order)."""
    width = LANES
    while width > 1:
        width //= 2
        upper = ir.Constant(ir.VectorType(I32, LANES), [width + lane for lane in range(LANES)])
        shifted = builder.shuffle_vector(vector, ir.Constant(VECTOR, None), upper)
        vector = builder.fadd(vector, shifted)
    return builder.extract_element(vector, ir.Constant(I32, 0))


def loop(builder, start, stop, carried: list, body) -> list:
    """Emit ``for i in range(start, stop)`` carrying the vectors ``carried`` through
    ``body(i, values) -> values``; returns their values after the loop (``carried`` when it
    runs no step)."""
    entry = builder.basic_block
    header = builder.append_basic_block("tile_loop")
    done = builder.append_basic_block("tile_loop_done")
    builder.cbranch(builder.icmp_signed("<", start, stop), header, done)
    builder.position_at_end(header)
    step = builder.phi(I64)
    step.add_incoming(start, entry)
    phis = [builder.phi(value.type) for value in carried]
    for phi, value in zip(phis, carried):
        phi.add_incoming(value, entry)
    updated = body(step, phis)
    following = builder.add(step, index(1))
    tail = builder.basic_block
    step.add_incoming(following, tail)
    for phi, value in zip(phis, updated):
        phi.add_incoming(value, tail)
    builder.cbranch(builder.icmp_signed("<", following, stop), header, done)
    builder.position_at_end(done)
    return _merge(builder, [(carried, entry), (updated, tail)])


def blocked_sum(builder, start, stop, block, totals: list, body) -> list:
    """Emit the sums of ``loop(start, stop, ..., body)`` in blocks of ``block`` steps (an int
    or an int64 value): each block's loop starts from zero vectors and its sums are then added
    to ``totals``. A float32 sum's rounding error grows with the number of terms added to one
    accumulator; in blocks it grows with the block's length plus the number of blocks, not with
    their product."""

    def one_block(low, high, zeros):
        return loop(builder, low, high, zeros, body)

    return sum_in_blocks(builder, start, stop, block, totals, one_block)


def sum_in_blocks(builder, start, stop, block, totals: list, block_sums) -> list:
    """``totals`` plus, for each block [low, high) of ``block`` steps of [start, stop),
    ``block_sums(low, high, zeros)``: the sums of one block, started from the zero vectors
    ``zeros`` (see ``blocked_sum``)."""
    block = index(block) if isinstance(block, int) else block
    zeros = [ir.Constant(value.type, None) for value in totals]
    length = builder.sub(stop, start)
    count = builder.sdiv(builder.add(length, builder.sub(block, index(1))), block)

    def one_block(b, sums):
        low = builder.add(start, builder.mul(b, block))
        high = builder.add(low, block)
        high = builder.select(builder.icmp_signed("<", high, stop), high, stop)
        partial = block_sums(low, high, zeros)
        return [builder.fadd(total, value) for total, value in zip(sums, partial)]

    return loop(builder, index(0), count, totals, one_block)


def when(builder, condition, carried: list, body) -> list:
    """Emit ``if condition: values = body(values)`` on the vectors ``carried``; returns their
    values after it."""
    entry = builder.basic_block
    then = builder.append_basic_block("tile_then")
    done = builder.append_basic_block("tile_endif")
    builder.cbranch(condition, then, done)
    builder.position_at_end(then)
    updated = body(carried)
    tail = builder.basic_block
    builder.branch(done)
    builder.position_at_end(done)
    return _merge(builder, [(carried, entry), (updated, tail)])


def _merge(builder, incoming: list) -> list:
    """Phis joining, value by value, the lists of ``(values, block)`` that reach this block."""
    merged = []
    for position in range(len(incoming[0][0])):
        phi = builder.phi(incoming[0][0][position].type)
        for values, block in incoming:
            phi.add_incoming(values[position], block)
        merged.append(phi)
    return merged
