"""einops on BuildingAI tensors: rearrange, reduce, repeat, einsum, pack and unpack through the
registered backend, against einops on PyTorch tensors in float64 (values and gradients), and
the Rearrange/Reduce layers. Skipped when einops is not installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn

einops = pytest.importorskip("einops")
torch = pytest.importorskip("torch")

CASES = [
    ("rearrange", ("b c h w -> b (h w) c",), {}),
    ("rearrange", ("b c (h p1) (w p2) -> b (h w) (p1 p2 c)",), {"p1": 2, "p2": 2}),
    ("rearrange", ("b c h w -> (b c) w h",), {}),
    ("reduce", ("b c h w -> b c", "mean"), {}),
    ("reduce", ("b c (h h2) (w w2) -> b c h w", "max"), {"h2": 2, "w2": 2}),
    ("reduce", ("b c h w -> c", "sum"), {}),
    ("reduce", ("b c h w -> b h w", "min"), {}),
    ("reduce", ("b c h w -> b", "prod"), {}),
    ("repeat", ("b c h w -> b c h w k",), {"k": 3}),
    ("repeat", ("b c h w -> b (c k) h w",), {"k": 2}),
]


def _apply(library, name, args, kwargs, x: np.ndarray, upstream: np.ndarray):
    tensor = library.tensor(x, requires_grad=True)
    out = getattr(einops, name)(tensor, *args, **kwargs)
    (out * library.tensor(upstream)).sum().backward()
    return out.detach().numpy(), tensor.grad.numpy()


@pytest.mark.parametrize("name, args, kwargs", CASES, ids=lambda case: str(case))
def test_einops_functions_match_pytorch(name, args, kwargs):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.5, size=(2, 3, 4, 6))
    expected, _ = _apply(torch, name, args, kwargs, x, np.zeros(1))
    upstream = rng.standard_normal(expected.shape)
    ours = _apply(bai, name, args, kwargs, x, upstream)
    theirs = _apply(torch, name, args, kwargs, x, upstream)
    np.testing.assert_allclose(ours[0], theirs[0], atol=1e-12, err_msg="values")
    np.testing.assert_allclose(ours[1], theirs[1], atol=1e-12, err_msg="gradient")


def test_einops_einsum_matches_pytorch():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    results = []
    for library in (bai, torch):
        left, right = library.tensor(a, requires_grad=True), library.tensor(b, requires_grad=True)
        out = einops.einsum(left, right, "batch i k, batch k j -> batch i j")
        out.pow(2).sum().backward()
        results.append([out.detach().numpy(), left.grad.numpy(), right.grad.numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, atol=1e-12)


def test_pack_unpack_and_parse_shape():
    x, y = bai.randn(2, 3, 4), bai.randn(2, 5)
    packed, shapes = einops.pack([x, y], "b *")
    assert tuple(packed.shape) == (2, 17)
    first, second = einops.unpack(packed, shapes, "b *")
    np.testing.assert_array_equal(first.numpy(), x.numpy())
    np.testing.assert_array_equal(second.numpy(), y.numpy())
    assert einops.parse_shape(x, "b c _") == {"b": 2, "c": 3}
    assert isinstance(einops.asnumpy(x), np.ndarray)


def test_rearrange_and_reduce_layers_in_a_model():
    patches = nn.Sequential(
        nn.Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=2),
        nn.Linear(12, 8),
        nn.Reduce("b n d -> b d", "mean"),
    )
    x = bai.randn(2, 3, 4, 6, requires_grad=True)
    out = patches(x)
    assert tuple(out.shape) == (2, 8)
    out.sum().backward()
    assert tuple(x.grad.shape) == (2, 3, 4, 6)
    assert repr(patches[0]) == "Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=2, p2=2)"
    assert repr(patches[2]) == "Reduce('b n d -> b d', 'mean')"
    assert list(patches.state_dict()) == ["1.weight", "1.bias"]
    copied = patches.clone()
    np.testing.assert_allclose(copied(x).numpy(), out.numpy(), atol=1e-6)


def test_layers_come_from_the_backend_too():
    from buildingai.nn import einops_layers

    backend = einops._backends.get_backend(bai.zeros((1,)))
    assert backend.framework_name == "buildingai"
    assert backend.layers() is einops_layers


def test_without_einops_buildingai_imports_and_the_layers_say_what_to_install():
    script = textwrap.dedent(
        """
        import importlib.abc, sys

        class NoEinops(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] == "einops":
                    raise ModuleNotFoundError(name)

        sys.meta_path.insert(0, NoEinops())
        import buildingai.nn as nn
        try:
            nn.Rearrange("a b -> b a")
        except ImportError as error:
            print(error)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert 'pip install "buildingai[einops]"' in result.stdout
