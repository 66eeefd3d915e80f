"""Checks that read input values (``Op.checks_values``: an index in range, a probability in
[0, 1]) run on every call of a traced graph, as in eager mode, and never on the sample values
a graph is traced with. Before, a compiled step took a negative class target as a class
counted from the end, and a binary cross-entropy of an input could not be traced at all."""

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai import TensorSpec, float32, int64, nn
from buildingai.autograd.dispatch import run_forward
from buildingai.errors import ArgumentError, BuildingAIError, IndexingError
from buildingai.graph import freeze
from buildingai.ops import loss as loss_ops
from buildingai.ops.base import Op
from buildingai.ops.index import ONE_HOT
from buildingai.ops.multinomial import MULTINOMIAL
from buildingai.ops.nn import EMBEDDING

RNG = np.random.default_rng(0)
LOGITS = bai.tensor(RNG.standard_normal((4, 5)).astype(np.float32))
TABLE = bai.tensor(RNG.standard_normal((5, 3)).astype(np.float32))


def _targets(first: int) -> bai.Tensor:
    return bai.tensor(np.array([first, 0, 1, 2], dtype=np.int64))


# name -> (function of one tensor, that tensor from one int, a valid int, the error's text)
INDEXED = {
    "cross_entropy": (
        lambda t: F.cross_entropy(LOGITS, t),
        _targets,
        "target class {} is out of range for 5 classes",
    ),
    "nll_loss": (
        lambda t: F.nll_loss(F.log_softmax(LOGITS, dim=1), t),
        _targets,
        "target class {} is out of range for 5 classes",
    ),
    "embedding": (
        lambda t: F.embedding(t, TABLE),
        _targets,
        "index {} is out of range for 5 embeddings",
    ),
    "one_hot": (
        lambda t: F.one_hot(t, 5),
        _targets,
        "class index {} is out of range for num_classes=5",
    ),
}


@pytest.mark.parametrize("name", sorted(INDEXED))
@pytest.mark.parametrize("bad", [-2, -1, 5, 9])
def test_a_compiled_function_refuses_an_index_out_of_range_as_eager_does(name, bad):
    function, make, message = INDEXED[name]
    with bai.no_grad():
        compiled = bai.compile(function, fullgraph=True)
        np.testing.assert_array_equal(compiled(make(3)).numpy(), function(make(3)).numpy())
        for run in (function, compiled):
            with pytest.raises(IndexingError, match=message.format(bad)):
                run(make(bad))
        # the graph still serves valid calls after refusing one
        np.testing.assert_array_equal(compiled(make(4)).numpy(), function(make(4)).numpy())


def _training_step(compiled: bool):
    bai.manual_seed(0)
    model = nn.Linear(3, 5)
    optimizer = bai.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    if compiled:
        step = bai.compile(step, [TensorSpec((None, 3), float32), TensorSpec((None,), int64)])
    return model, step


@pytest.mark.parametrize("bad", [-3, 5])
def test_a_compiled_training_step_refuses_a_target_out_of_range_and_changes_nothing(bad):
    x = bai.tensor(RNG.standard_normal((4, 3)).astype(np.float32))
    (eager_model, eager), (model, compiled) = _training_step(False), _training_step(True)
    np.testing.assert_allclose(compiled(x, _targets(1)).numpy(), eager(x, _targets(1)).numpy())
    before = [p.numpy().copy() for p in model.parameters()]
    with pytest.raises(IndexingError, match=f"target class {bad} is out of range for 5 classes"):
        compiled(x, _targets(bad))
    for parameter, kept in zip(model.parameters(), before):
        np.testing.assert_array_equal(parameter.numpy(), kept)  # no update on a refused step
    np.testing.assert_allclose(compiled(x, _targets(2)).numpy(), eager(x, _targets(2)).numpy())
    for ours, theirs in zip(model.parameters(), eager_model.parameters()):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_a_frozen_embedding_refuses_a_negative_index():
    model = nn.Embedding(5, 3).eval()
    graph = freeze(model, [TensorSpec((None,), int64)])
    tokens = np.array([0, 4, 2])
    np.testing.assert_array_equal(graph(tokens).numpy(), model(bai.tensor(tokens)).numpy())
    with pytest.raises(IndexingError, match=r"\[embedding\] index -1 is out of range"):
        graph(np.array([0, -1, 2]))


def test_tracing_makes_no_value_check_on_its_sample_inputs():
    """The samples a graph is traced with (standard normal floats) are not in every op's
    domain: the graph traces, and its runs check the real values."""
    targets = bai.tensor(np.array([0.5, 1.0], dtype=np.float32))
    bce = bai.compile(lambda p: F.binary_cross_entropy(p, targets), fullgraph=True)
    draw = bai.compile(lambda weights: bai.multinomial(weights, 1), fullgraph=True)
    with bai.no_grad():
        probabilities = bai.tensor(np.array([0.3, 0.9], dtype=np.float32))
        expected = F.binary_cross_entropy(probabilities, targets)
        np.testing.assert_allclose(bce(probabilities).numpy(), expected.numpy(), rtol=1e-6)
        with pytest.raises(ArgumentError, match="between 0 and 1"):
            bce(bai.tensor(np.array([1.5, 0.5], dtype=np.float32)))
        assert draw(bai.tensor(np.array([0.0, 1.0], dtype=np.float32))).numpy().tolist() == [1]
        with pytest.raises(BuildingAIError, match="finite and non-negative"):
            draw(bai.tensor(np.array([-1.0, 1.0], dtype=np.float32)))


def test_run_forward_makes_the_value_checks_of_the_ops_that_have_them():
    """``run_forward`` is how executors run an op: the value checks come with it."""
    calls = [
        (EMBEDDING, (np.array([-1]), TABLE.numpy()), {"padding_idx": None}),
        (ONE_HOT, (np.array([7]),), {"num_classes": 5}),
        (
            loss_ops.CROSS_ENTROPY,
            (LOGITS.numpy(), np.array([0, 0, 0, -5])),
            {"axis": 1, "ignore_index": -100, "reduction": "mean"},
        ),
    ]
    for op, arrays, attrs in calls:
        assert op.checks_values
        with pytest.raises(IndexingError):
            run_forward(op, None, np, *arrays, **attrs)
    with pytest.raises(BuildingAIError, match="non-negative"):
        run_forward(MULTINOMIAL, None, np, np.array([-1.0, 1.0]), num_samples=1, replacement=True)


def test_ops_without_value_checks_keep_their_checks_to_the_front_door():
    assert Op.checks_values is False
    assert not loss_ops.CROSS_ENTROPY_GRAD.checks_values


def test_one_hot_counting_its_classes_from_the_values_is_refused_when_traced():
    """``num_classes=-1`` takes the count from the indices: a graph would keep the count of the
    samples it was traced with, so tracing refuses it as any other read of an input's value."""
    with bai.no_grad():
        compiled = bai.compile(lambda t: F.one_hot(t), fullgraph=True)
        with pytest.raises(bai.graph.GraphError, match="reads the value of a tensor"):
            compiled(_targets(3))
    assert F.one_hot(_targets(3)).shape == (4, 4)  # eager: 1 + the largest index


def test_a_distribution_of_a_traced_input_checks_each_runs_parameters():
    """A distribution's parameter check (the ``require`` record) is made on every run, and was
    made on the trace's sample scales too: a standard normal sample is negative."""
    from buildingai.prob import Normal

    point = bai.tensor(np.array([0.1, 0.5], dtype=np.float32))

    def log_density(scale):
        return Normal(bai.zeros(2), scale).log_prob(point)

    with bai.no_grad():
        compiled = bai.compile(log_density, fullgraph=True)
        for scale in ([1.0, 2.0], [0.5, 3.0]):
            scale = bai.tensor(np.array(scale, dtype=np.float32))
            np.testing.assert_allclose(compiled(scale).numpy(), log_density(scale).numpy())
        with pytest.raises(ArgumentError, match=r"\[Normal\] scale must be positive; got -1"):
            compiled(bai.tensor(np.array([-1.0, 2.0], dtype=np.float32)))
