"""The op table's test cases, in the spirit of PyTorch's OpInfo: one ``OpCase`` per primitive op
record, naming how to draw sample inputs (random shapes, dtypes and attributes), the PyTorch
reference it is checked against, how its gradient is checked, whether a one-op graph is exported
to ONNX, and a written reason wherever a check does not apply.

``tests/ops/test_op_records.py`` walks ``buildingai.ops.all_ops()`` with this table and fails
when a record has no case, or a case lacks a check without saying why.

The machinery is in ``base.py``; the cases, one module per op family, mirror ``buildingai.ops``.
A sample maker receives a ``Draw`` and returns the ``Sample`` of one call: it builds input
Tensors (axes named ``"n"`` or ``"m"`` share a random size, and may be made symbolic), then runs
the op, usually through the public function users call, while ``Draw.capture`` records the op's
inputs and attributes exactly as dispatch receives them. Gradient ops are captured from the
backward pass of their forward op, so that their inputs are realistic.
"""

from . import (  # noqa: F401 - each module adds its cases
    activation_extra,
    attention,
    batch_norm,
    creation,
    ctc,
    decompositions,
    elementwise,
    elementwise_math,
    grid_sampling,
    linalg,
    nn,
    random,
    rectifier_grads,
    reduce,
    resize,
    rnn_cells,
    scatter,
    shape,
    sort,
    trigonometry,
    volumes,
)
from .base import CASES, NOT_DIFFERENTIABLE, OPS, Draw, OpCase, Sample

__all__ = ["CASES", "NOT_DIFFERENTIABLE", "OPS", "Draw", "OpCase", "Sample"]
