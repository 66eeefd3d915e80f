"""Ops whose ONNX mapping lives in files edited elsewhere and may not have landed yet.

A test that meets one of these without a mapping is marked xfail (naming it); any other op
without a mapping is a failure."""

from __future__ import annotations

import re

import pytest

from buildingai.export import check_onnx
from buildingai.ops import elementwise

PENDING = {
    "conv2d",  # ops/conv.py
    "standardize",  # ops/norm.py
    "lstm_recurrence",  # nn/functional/rnn_fused.py
    "max_pool2d",
} | {op.name for op in vars(elementwise).values() if hasattr(op, "forward") and hasattr(op, "name")}


def xfail_if_pending(static) -> None:
    missing = check_onnx(static)
    if not missing:
        return
    names = {re.match(r"'([^']+)'", line).group(1) for line in missing}
    unexpected = names - PENDING
    assert not unexpected, f"ops without an ONNX mapping: {missing}"
    pytest.xfail(f"ONNX mapping not landed yet for {sorted(names)}")
