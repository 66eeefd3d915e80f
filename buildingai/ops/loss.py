"""Loss primitive: element-wise binary cross-entropy on probabilities.

``binary_cross_entropy`` is one op rather than a composite because its PyTorch semantics cannot be
composed faithfully from log and clamp: the logarithms are clamped to >= -100 (so a probability of
exactly 0 or 1 gives a finite loss), and the gradient is ``(x - t) / max(x (1 - x), 1e-12)``,
finite even there, where the chain rule through a clamped log would give 0 or nan.
"""

from __future__ import annotations

from ..errors import ArgumentError
from .base import Op

LOG_FLOOR = -100.0  # PyTorch's lower bound on log(x) and log(1 - x)
GRAD_EPSILON = 1e-12  # PyTorch's lower bound on x (1 - x) in the gradient


class BinaryCrossEntropy(Op):
    """``-(t * max(log x, -100) + (1 - t) * max(log(1 - x), -100))``, element-wise.

    x (probabilities in [0, 1]) and t (targets in [0, 1]) have the same shape -> same shape.
    """

    name, onnx = "binary_cross_entropy", None  # an exporter writes Log/Max/Mul/Sub

    def check(self, x, t):
        if x.size and (x.min() < 0 or x.max() > 1):
            raise ArgumentError(
                f"[binary_cross_entropy] all elements of input should be between 0 and 1, got "
                f"values in [{float(x.min())}, {float(x.max())}] (input {tuple(x.shape)})",
                help="apply sigmoid first, or use binary_cross_entropy_with_logits on the raw "
                "scores (more accurate)",
            )

    def forward(self, ctx, xp, x, t):
        floor = x.dtype.type(LOG_FLOOR)
        with xp.errstate(divide="ignore"):  # log(0) = -inf is clamped just below
            log_x = xp.maximum(xp.log(x), floor)
            log_not_x = xp.maximum(xp.log1p(-x), floor)
        return (t - 1) * log_not_x - t * log_x

    def backward(self, ctx, grad):
        x, t = ctx.inputs
        grad_x = grad * (x - t) / (x * (1 - x)).clamp(min=GRAD_EPSILON)
        grad_t = None
        if isinstance(t, type(x)) and t.requires_grad:
            grad_t = grad * ((-x).log1p().clamp(min=LOG_FLOOR) - x.log().clamp(min=LOG_FLOOR))
        return grad_x, grad_t


BINARY_CROSS_ENTROPY = BinaryCrossEntropy()
