"""A GPT model file written for PyTorch (``tiny_gpt_torch.py``: causal mask from ``tril`` in a
buffer, ``masked_fill``, softmax, GELU MLP, LayerNorm, Embedding, tied weights, ``generate``
with ``topk``, ``multinomial``, ``torch.long`` and ``torch.cat``) runs on BuildingAI with only
its import lines changed: the same source text, executed once per library, gives the same
logits, loss and gradients to float32 round-off from the same weights, and generates."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")

SOURCE = (Path(__file__).parent / "tiny_gpt_torch.py").read_text()
TORCH_IMPORTS = "import torch\nimport torch.nn as nn\nfrom torch.nn import functional as F\n"
OUR_IMPORTS = "import buildingai as torch\nimport buildingai.nn as nn\nfrom buildingai.nn import functional as F\n"


def _module(text: str, name: str):
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    try:
        exec(compile(text, f"<{name}>", "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return module


@pytest.fixture(scope="module")
def models():
    assert SOURCE.count(TORCH_IMPORTS) == 1
    ours_source = SOURCE.replace(TORCH_IMPORTS, OUR_IMPORTS)
    changed = [(a, b) for a, b in zip(SOURCE.splitlines(), ours_source.splitlines()) if a != b]
    assert [a for a, _ in changed] == TORCH_IMPORTS.splitlines()  # only the import lines differ
    theirs_file = _module(SOURCE, "tiny_gpt_on_torch")
    ours_file = _module(ours_source, "tiny_gpt_on_buildingai")
    torch.manual_seed(0)
    theirs = theirs_file.TinyGPT(theirs_file.ModelSettings())
    ours = ours_file.TinyGPT(ours_file.ModelSettings())
    state = {name: value.detach().numpy() for name, value in theirs.state_dict().items()}
    ours.load_state_dict({name: bai.tensor(value) for name, value in state.items()})
    return theirs.eval(), ours.eval()


def _batch():
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 23, size=(3, 12))
    targets = rng.integers(0, 23, size=(3, 12))
    targets[0, :3] = -1  # ignored positions
    return idx, targets


def test_same_source_same_logits_loss_and_gradients(models):
    theirs, ours = models
    idx, targets = _batch()
    assert ours.parameter_count() == theirs.parameter_count()
    assert ours.head.weight is ours.body.tokens.weight  # tied as the source ties them
    their_logits, their_loss = theirs(torch.tensor(idx), torch.tensor(targets))
    our_logits, our_loss = ours(bai.tensor(idx), bai.tensor(targets))
    assert our_logits.dtype == bai.float32 and our_logits.shape == tuple(their_logits.shape)
    np.testing.assert_allclose(our_logits.numpy(), their_logits.detach().numpy(), atol=2e-6)
    np.testing.assert_allclose(our_loss.item(), their_loss.item(), rtol=1e-6)
    their_loss.backward()
    our_loss.backward()
    their_grads = dict(theirs.named_parameters())
    for name, parameter in ours.named_parameters():
        expected = their_grads[name].grad.numpy()
        np.testing.assert_allclose(parameter.grad.numpy(), expected, atol=2e-6, err_msg=name)
    last, _ = ours(bai.tensor(idx))  # inference: the last position only
    np.testing.assert_allclose(last.numpy(), our_logits.numpy()[:, -1:, :], atol=1e-6)


def test_generate_runs_the_same_way_on_both(models):
    theirs, ours = models
    start = _batch()[0][:, :4]
    bai.manual_seed(1)
    tokens = ours.generate(bai.tensor(start), 20, temperature=0.8, top_k=5)  # past the context
    assert tokens.shape == (3, 24) and tokens.dtype == bai.long
    np.testing.assert_array_equal(tokens.numpy()[:, :4], start)
    assert ((tokens.numpy() >= 0) & (tokens.numpy() < 23)).all()
    assert theirs.generate(torch.tensor(start), 3, top_k=5).shape == (3, 7)
    # with top_k=1 sampling is greedy: both libraries pick the same tokens
    greedy_ours = ours.generate(bai.tensor(start), 6, top_k=1).numpy()
    greedy_theirs = theirs.generate(torch.tensor(start), 6, top_k=1).numpy()
    np.testing.assert_array_equal(greedy_ours, greedy_theirs)
