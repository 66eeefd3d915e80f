"""Every module that registers kernels, imported once so that their kernels are known."""

from . import (  # noqa: F401
    activations,
    attention,
    channel_norm,
    convolution,
    elementwise,
    embedding,
    index_into,
    optimizers,
    pooling,
    prelu,
    products,
    recurrence,
    reductions,
    resize,
    rnn_cell_step,
    rows,
    updates,
)
