"""Finite-difference checks of analytic gradients (first and second order), in float64."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..autograd.engine import grad
from ..autograd.mode import enable_grad, no_grad
from ..autograd.tensor import Tensor
from ..errors import GradcheckError


def _outputs(fn, inputs) -> list[Tensor]:
    result = fn(*inputs)
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _differentiable(inputs) -> list[int]:
    return [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]


def _numerical_jacobian(fn, inputs, position: int, eps: float) -> list[np.ndarray]:
    """Central differences: one (out.size, input.size) matrix per output."""
    target = inputs[position]
    flat = target.array.reshape(-1)  # a view: writing it perturbs the input in place
    columns: list[list[np.ndarray]] = []
    with no_grad():
        for index in range(flat.size):
            original = flat[index]
            flat[index] = original + eps
            plus = [o.numpy().reshape(-1) for o in _outputs(fn, inputs)]
            flat[index] = original - eps
            minus = [o.numpy().reshape(-1) for o in _outputs(fn, inputs)]
            flat[index] = original
            columns.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
    outputs = _outputs(fn, inputs)
    return [
        np.stack([column[k] for column in columns], axis=1)
        if columns
        else np.zeros((outputs[k].numel(), 0))
        for k in range(len(outputs))
    ]


def _analytic_jacobian(fn, inputs, position: int) -> list[np.ndarray]:
    """One backward per output element: rows of d(out)/d(input)."""
    outputs = _outputs(fn, inputs)
    target = inputs[position]
    jacobians = []
    for output in outputs:
        rows = np.zeros((output.numel(), target.numel()))
        if output.requires_grad:
            for index in range(output.numel()):
                seed = np.zeros(output.numel(), dtype=output.dtype)
                seed[index] = 1
                (value,) = grad(
                    output,
                    target,
                    grad_outputs=Tensor(seed.reshape(output.shape)),
                    retain_graph=True,
                    allow_unused=True,
                )
                if value is not None:
                    rows[index] = value.numpy().reshape(-1)
        jacobians.append(rows)
    return jacobians


def gradcheck(
    fn: Callable, inputs: Sequence, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3
) -> bool:
    """Compare the analytic Jacobian of ``fn`` with central finite differences.

    Args:
        fn: a function of ``inputs`` returning a Tensor or a tuple of Tensors.
        inputs: Tensors (float64, those to check with ``requires_grad=True``) or other values.

    Returns True, or raises ``GradcheckError`` naming the worst element.
    """
    inputs = list(inputs)
    for position in _differentiable(inputs):
        if inputs[position].dtype != np.float64:
            raise GradcheckError(
                f"[gradcheck] input {position} is {inputs[position].dtype}; finite differences "
                "need float64",
                help="convert the inputs with .double()",
            )
        numerical = _numerical_jacobian(fn, inputs, position, eps)
        analytic = _analytic_jacobian(fn, inputs, position)
        for out_index, (num, ana) in enumerate(zip(numerical, analytic)):
            _compare(num, ana, atol, rtol, f"output {out_index} w.r.t. input {position}")
    return True


def gradgradcheck(
    fn: Callable,
    inputs: Sequence,
    grad_outputs: Sequence | None = None,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    seed: int = 0,
) -> bool:
    """Check second derivatives: ``gradcheck`` of the function that maps the inputs (and the
    output weights) to the first-order gradients computed with ``create_graph=True``."""
    inputs = list(inputs)
    positions = _differentiable(inputs)
    outputs = _outputs(fn, inputs)
    if grad_outputs is None:
        generator = np.random.default_rng(seed)
        grad_outputs = [
            Tensor(generator.standard_normal(o.shape), requires_grad=True) for o in outputs
        ]
    grad_outputs = list(grad_outputs)
    count = len(inputs)

    def first_order(*values):
        current, weights = list(values[:count]), list(values[count:])
        with enable_grad():  # the numerical pass runs under no_grad; first-order grads need a graph
            outs = _outputs(fn, current)
            used = [(o, w) for o, w in zip(outs, weights) if o.requires_grad]
            grads = grad(
                [o for o, _ in used],
                [current[p] for p in positions],
                grad_outputs=[w for _, w in used],
                create_graph=True,
                allow_unused=True,
            )
        return tuple(g if g is not None else current[p] * 0 for g, p in zip(grads, positions))

    return gradcheck(first_order, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol)


def _compare(
    numerical: np.ndarray, analytic: np.ndarray, atol: float, rtol: float, where: str
) -> None:
    error = np.abs(numerical - analytic)
    allowed = atol + rtol * np.abs(numerical)
    if not np.all(error <= allowed):
        row, column = np.unravel_index(np.argmax(error - allowed), error.shape)
        raise GradcheckError(
            f"[gradcheck] Jacobian mismatch for {where} at (output element {row}, input element "
            f"{column}): analytic {analytic[row, column]:.10g}, numerical "
            f"{numerical[row, column]:.10g}, difference {error[row, column]:.3g} > allowed "
            f"{allowed[row, column]:.3g}"
        )
