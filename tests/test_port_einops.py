"""``buildingai port`` moves einops' PyTorch layers to BuildingAI's: ``einops.layers.torch``
becomes ``buildingai.nn``, where ``Rearrange`` and ``Reduce`` live; other einops imports stay."""

import textwrap

import numpy as np
import pytest

from buildingai.port import rewrite_imports

PROGRAM = textwrap.dedent(
    """\
    import einops
    import einops.layers.torch
    import einops.layers.torch as layers
    from einops import rearrange
    from einops.layers.torch import Rearrange, Reduce
    from einops.layers.torch import (
        Rearrange as R,
    )
    from einops.layers.tensorflow import Rearrange as TFRearrange
    """
)

EXPECTED = textwrap.dedent(
    """\
    import einops
    import einops.layers.torch
    import buildingai.nn as layers
    from einops import rearrange
    from buildingai.nn import Rearrange, Reduce
    from buildingai.nn import (
        Rearrange as R,
    )
    from einops.layers.tensorflow import Rearrange as TFRearrange
    """
)


def test_einops_torch_layers_are_imported_from_buildingai_nn():
    ported, changes = rewrite_imports(PROGRAM)
    assert ported == EXPECTED
    assert [change.line for change in changes] == [3, 5, 6]
    assert str(changes[1]) == (
        "line 5: from einops.layers.torch import Rearrange, Reduce  ->  "
        "from buildingai.nn import Rearrange, Reduce"
    )


def test_a_ported_vision_transformer_patch_embedding_runs_the_same():
    pytest.importorskip("einops")
    pytest.importorskip("torch")
    program = textwrap.dedent(
        """\
        import torch
        from torch import nn
        from einops.layers.torch import Rearrange, Reduce


        def main(images, weight, bias):
            patches = nn.Sequential(
                Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=2),
                nn.Linear(12, 5),
                Reduce("b n d -> b d", "mean"),
            )
            with torch.no_grad():
                patches[1].weight.copy_(torch.tensor(weight))
                patches[1].bias.copy_(torch.tensor(bias))
                return patches(torch.tensor(images)).numpy()
        """
    )
    rng = np.random.default_rng(0)
    arguments = (
        rng.normal(size=(2, 3, 4, 4)).astype(np.float32),
        rng.normal(size=(5, 12)).astype(np.float32),
        rng.normal(size=(5,)).astype(np.float32),
    )
    results = []
    ported, _ = rewrite_imports(program)
    assert "from buildingai.nn import Rearrange, Reduce" in ported
    for source in (program, ported):
        namespace = {}
        exec(source, namespace)
        results.append(namespace["main"](*arguments))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)
