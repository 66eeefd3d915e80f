"""The gradient of ``nll_loss`` taken through the ``log_softmax`` that made its input, as one op:
``log_softmax_nll_grad``.

A model that ends in ``log_softmax`` and trains with ``nll_loss`` (PyTorch's word language
model, and every model written for ``nn.NLLLoss``) differentiates the pair as two ops:
``nll_loss_grad`` fills an array of the log-probabilities' shape with zeros and puts each
sample's coefficient at its target class, then ``log_softmax_grad`` reads that array and the
log-probabilities and writes a third. For a (700, 10000) vocabulary that is three passes over
28 MB more than the gradient needs. A training graph joins the two
(``graph/passes/loss_gradient.py``) where nothing else reads the scattered array.

With a = -(grad * scale) per sample (``nll_loss_grad``'s coefficient) and y the
log-probabilities, the result is ``a - exp(y) a`` at each sample's target class and
``-(exp(y) a)`` elsewhere: what the two ops give, as the record computes it (by running them).
"""

from __future__ import annotations

import numpy as np

from .abstract import memory_cost
from .base import Op
from .loss import NLL_LOSS_GRAD
from .nn import LOG_SOFTMAX_GRAD


class LogSoftmaxNLLGrad(Op):
    """``log_softmax_grad(nll_loss_grad(grad, y, scale), y)``.

    Inputs as ``nll_loss_grad``'s: grad (the loss's gradient, () or the target's shape), y
    (the log-probabilities, now read for their values) and scale (per-sample weight over the
    normalizer, a constant); attributes ``index`` (the target classes, y's shape with 1 along
    ``axis``) and ``axis``. Output: y's shape, the gradient of the loss with respect to the
    logits y was computed from.
    """

    name = "log_softmax_nll_grad"

    def forward(self, ctx, xp, grad, log_probs, scale, *, index, axis):
        scattered = NLL_LOSS_GRAD.forward(ctx, xp, grad, log_probs, scale, index=index, axis=axis)
        return LOG_SOFTMAX_GRAD.forward(ctx, xp, scattered, log_probs, axis=axis)

    def infer(self, grad, log_probs, scale, *, index, axis):
        return log_probs.with_dtype(np.result_type(log_probs.dtype, grad.dtype, scale.dtype))

    def cost(self, grad, log_probs, scale, *, index, axis):
        # an exponential, a product and a negation per element; one more sum at each target
        out = self.infer(grad, log_probs, scale, index=index, axis=axis)
        return memory_cost((grad, log_probs, scale), out, 3)

    def backward(self, ctx, grad_of_result):
        """The two ops' rules in turn: ``log_softmax_grad``'s on the scattered gradient G
        (rebuilt by ``nll_loss_grad``), then ``nll_loss_grad``'s pick for grad."""
        grad, log_probs, scale = ctx.inputs
        index, axis = ctx.attrs["index"], ctx.attrs["axis"]
        probs = log_probs.exp()
        grad_grad = grad_log_probs = None
        if grad.requires_grad:
            through = grad_of_result - (grad_of_result * probs).sum(axis=axis, keepdims=True)
            picked = through.take_along_axis(ctx.tensor(index), axis=axis).squeeze(axis)
            grad_grad = -(picked * scale)
        if log_probs.requires_grad:
            scattered = NLL_LOSS_GRAD(grad, log_probs, scale, index=index, axis=axis)
            grad_log_probs = -grad_of_result * probs * scattered.sum(axis=axis, keepdims=True)
        return grad_grad, grad_log_probs, None


LOG_SOFTMAX_NLL_GRAD = LogSoftmaxNLLGrad()
