"""Linear algebra: matmul (``@``), dot, outer, mm, bmm, the dense-layer map ``linear``, einsum."""

from __future__ import annotations

import string

from ..autograd.dispatch import apply, binary_operator, tensor_operator
from ..autograd.tensor import Tensor
from ..backend.device import array_namespace
from ..backend.dtypes import is_floating
from ..errors import DTypeError, ShapeError, dimensions
from ..ops import linalg as ops

# The product through dispatch's operator path (apply's steps for an unwatched CPU call inline)
_PRODUCT = binary_operator(ops.MATMUL)
# The dense layer through dispatch's Tensor path (apply's steps for an unrecorded CPU call inline)
_LINEAR = tensor_operator(ops.LINEAR)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product with NumPy's rules: 1-D operands are treated as a row (left) or a column
    (right) vector and that dimension is removed again; batch dimensions broadcast.

    a: (..., n, k), b: (..., k, m) -> (..., n, m)
    """
    # Two stacks of matrices go straight to the op, which reports any mismatch. Plain Tensors
    # (the common case) have their ranks read from the arrays: no property calls.
    plain = type(a) is Tensor and type(b) is Tensor
    if (a.array.ndim >= 2 and b.array.ndim >= 2) if plain else (a.ndim >= 2 and b.ndim >= 2):
        return _PRODUCT(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            f"[matmul] operands must have at least one dimension, got {tuple(a.shape)} and "
            f"{tuple(b.shape)}",
            help="use * to multiply by a scalar",
        )
    left_vector, right_vector = a.ndim == 1, b.ndim == 1
    inner_b = b.shape[0] if right_vector else b.shape[-2]
    if a.shape[-1] != inner_b:  # report the shapes as given, before vectors become matrices
        raise ShapeError(
            f"[matmul] cannot multiply {tuple(a.shape)} by {tuple(b.shape)}: inner dimensions "
            f"{a.shape[-1]} != {inner_b}",
            help="the last dimension of the left operand must equal the "
            f"{'first' if right_vector else 'second-to-last'} of the right one; transpose an "
            "operand (x.T or x.swapaxes(-1, -2)) if needed",
        )
    if left_vector:
        a = a.reshape(1, a.shape[0])
    if right_vector:
        b = b.reshape(b.shape[0], 1)
    out = _PRODUCT(a, b)
    if left_vector and right_vector:
        return out.reshape(())
    if left_vector:
        return out.reshape(out.shape[:-2] + out.shape[-1:])
    if right_vector:
        return out.reshape(out.shape[:-1])
    return out


def dot(a: Tensor, b: Tensor) -> Tensor:
    """Inner product of two 1-D tensors of equal length: a: (n,), b: (n,) -> ()."""
    if a.ndim != 1 or b.ndim != 1 or a.shape[0] != b.shape[0]:
        raise ShapeError(
            f"[dot] expects two 1-D tensors of equal length, got {tuple(a.shape)} and "
            f"{tuple(b.shape)}",
            help="use matmul (@) for matrices, or flatten the operands first",
        )
    return matmul(a, b)


def outer(a: Tensor, b: Tensor) -> Tensor:
    """Outer product of two 1-D tensors: a: (n,), b: (m,) -> (n, m)."""
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(
            f"[outer] expects two 1-D tensors, got {tuple(a.shape)} and {tuple(b.shape)}",
            help="flatten the operands first, or use einsum for higher-rank outer products",
        )
    # a broadcast product: no reduction happens, so a GEMM would only add overhead
    return a.reshape(a.shape[0], 1) * b.reshape(1, b.shape[0])


def mm(a: Tensor, b: Tensor) -> Tensor:
    """Product of two matrices, without broadcasting: a: (n, k), b: (k, m) -> (n, m)."""
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError(
            f"[mm] expects two 2-D tensors, got {tuple(a.shape)} and {tuple(b.shape)}",
            help="use matmul (@) for vectors and batches",
        )
    return _PRODUCT(a, b)


def bmm(a: Tensor, b: Tensor) -> Tensor:
    """Batched matrix product, without broadcasting: a: (B, n, k), b: (B, k, m) -> (B, n, m)."""
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0]:
        raise ShapeError(
            f"[bmm] expects two 3-D tensors with the same batch size, got {tuple(a.shape)} and "
            f"{tuple(b.shape)}",
            help="use matmul (@) to broadcast batch dimensions",
        )
    return _PRODUCT(a, b)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """The affine map of a dense layer: ``x @ weight.T + bias``, with PyTorch's weight layout.

    x: (..., in_features), weight: (out_features, in_features), bias: (out_features,) or None
    -> (..., out_features)
    """
    if bias is None:  # (the record's check refuses an integer input, as PyTorch does)
        return _LINEAR(x, weight)
    return _LINEAR(x, weight, bias)


def check_floating_input(op: str, x: Tensor, weight: Tensor) -> None:
    """Refuse an integer or bool input to a layer with floating weights, as PyTorch does: NumPy
    would silently promote it (int64 @ float32 -> float64)."""
    dtype = getattr(x, "dtype", None)  # not x.array: a pending parallel() result would wait
    if dtype is None or is_floating(dtype):
        return
    raise DTypeError(
        f"[{op}] input must be a floating-point tensor, got {dtype} of shape "
        f"{tuple(x.shape)} (weight {weight.dtype} {tuple(weight.shape)})",
        help=f"convert it first: x.float(), or x.astype('{weight.dtype}') to match the weight",
    )


# ----- einsum -----------------------------------------------------------------------------------

_LABELS = string.ascii_letters


def einsum(subscripts: str, *operands: Tensor) -> Tensor:
    """Einstein summation, as ``numpy.einsum`` and ``torch.einsum``.

    ``einsum("bij,bjk->bik", a, b)`` is a batched matmul; ``"ij->ji"`` a transpose; ``"ii->i"``
    a diagonal; ``"i,j->ij"`` an outer product. Without ``->`` the output holds the ellipsis
    dimensions, then the labels used once, in alphabetical order. ``...`` stands for broadcast
    dimensions; labels (and ellipsis dimensions) of size 1 broadcast against their partners.
    Contractions of three or more operands follow an optimised contraction path.
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])  # torch.einsum("ij->ji", [x]) spelling
    if not operands:
        raise ShapeError("[einsum] needs at least one operand")
    terms, output = _parse_subscripts(subscripts, operands)
    operands = [_diagonal(x, term, subscripts) for x, term in zip(operands, terms)]
    terms = ["".join(dict.fromkeys(term)) for term in terms]
    operands = _broadcast_labels(operands, terms, subscripts)
    equation = ",".join(terms) + "->" + output
    return apply(ops.EINSUM, *operands, equation=equation)


def _parse_subscripts(subscripts: str, operands) -> tuple[list[str], str]:
    """Explicit labels for every operand and the output (ellipses replaced by fresh labels)."""
    text = subscripts.replace(" ", "")
    if text.count("->") > 1:
        raise ShapeError(f"[einsum] subscripts '{subscripts}' contain '->' more than once")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ShapeError(
            f"[einsum] subscripts '{subscripts}' name {len(terms)} operand(s) but "
            f"{len(operands)} were given",
            help="write one comma-separated term per operand",
        )
    for term in [*terms, output]:
        bad = set(term.replace("...", "")) - set(_LABELS)
        if bad or term.count("...") > 1:
            raise ShapeError(
                f"[einsum] invalid subscripts '{subscripts}'",
                help="labels are letters a-z and A-Z; '...' may appear once per term",
            )
    ellipsis_ranks = []
    for position, (term, x) in enumerate(zip(terms, operands)):
        named = len(term.replace("...", ""))
        if ("..." in term and named > x.ndim) or ("..." not in term and named != x.ndim):
            raise ShapeError(
                f"[einsum] operand {position} has shape {tuple(x.shape)} "
                f"({'a 0-d tensor' if x.ndim == 0 else dimensions(x.ndim)}) "
                f"but its subscripts '{term}' name {named}",
                help="write one label per dimension, or '...' for the leading ones",
            )
        ellipsis_ranks.append(x.ndim - named if "..." in term else 0)

    used = set(text)
    free = [label for label in _LABELS if label not in used]
    rank = max(ellipsis_ranks)
    if rank > len(free):
        raise ShapeError(f"[einsum] too many dimensions for the labels left in '{subscripts}'")
    broadcast = "".join(free[:rank])
    terms = [term.replace("...", broadcast[rank - r :]) for term, r in zip(terms, ellipsis_ranks)]
    if arrow:
        output = output.replace("...", broadcast)
        present = set("".join(terms))
        for label in output:
            if label not in present:
                raise ShapeError(
                    f"[einsum] output label '{label}' in '{subscripts}' names no input dimension"
                )
        if len(set(output)) != len(output):
            raise ShapeError(f"[einsum] output subscripts in '{subscripts}' repeat a label")
    else:
        counts: dict[str, int] = {}
        for label in "".join(terms):
            counts[label] = counts.get(label, 0) + 1
        once = sorted(label for label, count in counts.items() if count == 1)
        output = broadcast + "".join(label for label in once if label not in broadcast)
    return terms, output


def _diagonal(x: Tensor, term: str, subscripts: str) -> Tensor:
    """Take the diagonal over labels repeated within one operand (``'ii->i'``), so the einsum op
    itself never sees a repeat. Indexing is differentiable, so gradients flow back onto the
    diagonal."""
    unique = "".join(dict.fromkeys(term))
    if len(unique) == len(term):
        return x
    sizes: dict[str, int] = {}
    for label, extent in zip(term, x.shape):
        if sizes.setdefault(label, extent) != extent:
            raise ShapeError(
                f"[einsum] repeated label '{label}' in '{subscripts}' spans dimensions of sizes "
                f"{sizes[label]} and {extent} in an operand of shape {tuple(x.shape)}",
                help="a label repeated within one operand takes a diagonal, which must be square",
            )
    xp = array_namespace(x.array)
    index = []
    for label in term:
        # each axis is indexed by arange over its label, laid along that label's output axis
        layout = [1] * len(unique)
        layout[unique.index(label)] = -1
        index.append(xp.arange(sizes[label]).reshape(layout))
    return x.getitem(tuple(index))


def _broadcast_labels(operands: list, terms: list[str], subscripts: str) -> list:
    """Expand size-1 dimensions to the size their label has elsewhere."""
    sizes: dict[str, int] = {}
    for term, x in zip(terms, operands):
        for label, extent in zip(term, x.shape):
            known = sizes.get(label, 1)
            if extent != 1 and known != 1 and extent != known:
                shapes = ", ".join(str(tuple(o.shape)) for o in operands)
                raise ShapeError(
                    f"[einsum] label '{label}' has sizes {known} and {extent} in "
                    f"'{subscripts}' with operands {shapes}",
                    help="dimensions that share a label must have the same size (or 1)",
                )
            if extent != 1:
                sizes[label] = extent
            else:
                sizes.setdefault(label, 1)
    expanded = []
    for term, x in zip(terms, operands):
        target = tuple(sizes[label] for label in term)
        expanded.append(x if tuple(x.shape) == target else x.expand(target))
    return expanded


__all__ = ["matmul", "dot", "outer", "mm", "bmm", "linear", "einsum"]

TENSOR_METHODS = {
    # ``x @ y`` of two stacks of matrices takes dispatch's operator path, vectors go to matmul
    "matmul": matmul, "__matmul__": binary_operator(ops.MATMUL, rank=2, general=matmul), "__rmatmul__": lambda self, other: matmul(other, self),
    "dot": dot, "outer": outer, "mm": mm, "bmm": bmm,
}  # fmt: skip
