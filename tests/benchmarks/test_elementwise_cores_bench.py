"""The element-wise options compared in ``benchmarks/elementwise_cores.py`` compute what their
NumPy reference computes (numexpr and numba forms only where those are installed)."""

import numpy as np
import pytest

from benchmarks import elementwise_cores as bench


@pytest.mark.parametrize("chain", ["gelu", "relu", "fma"])
@pytest.mark.slow
def test_every_option_matches_the_numpy_reference(chain):
    arrays = bench.arrays_for(10_001)[chain]
    forms = {"split": bench._split_form(bench.NUMPY[chain])}
    for label, options in (("numexpr", bench.numexpr_forms()), ("numba", bench.numba_forms())):
        if options is not None:
            forms[label] = options[chain]
    for form in forms.values():
        bench.check(chain, form, arrays)  # raises with the largest difference


def test_the_numpy_gelu_reference_is_the_tanh_gelu():
    x = np.linspace(-4, 4, 101, dtype=np.float32)
    out, gate = np.empty_like(x), np.empty_like(x)
    bench.np_gelu_tanh(x, out, gate)
    k = np.sqrt(2 / np.pi)
    expected = 0.5 * x * (1 + np.tanh(k * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
