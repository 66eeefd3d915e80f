"""The onnxruntime session options: exact int8 products where a model quantizes activations."""

import pytest

from buildingai.export.runtime_options import session_options

onnxruntime = pytest.importorskip("onnxruntime")

PRECISION = "session.x64quantprecision"


@pytest.mark.parametrize("op", ["QuantizeLinear", "DynamicQuantizeLinear", "MatMulInteger"])
def test_int8_activations_ask_for_exact_products(op):
    options = session_options(onnxruntime, {"Conv", op})
    assert options.get_session_config_entry(PRECISION) == "1"
    assert options.log_severity_level == 3


def test_float_and_weight_only_models_keep_the_default_kernels():
    for op_types in ({"Conv", "Relu"}, {"DequantizeLinear", "LSTM"}):
        options = session_options(onnxruntime, op_types)
        with pytest.raises(RuntimeError, match=PRECISION):  # not set: onnxruntime's default
            options.get_session_config_entry(PRECISION)
