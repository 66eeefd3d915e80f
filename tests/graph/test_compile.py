"""``buildingai.compile``: a training step traced into a static graph (forward, the backward the
op records define, the optimizer update) gives the losses, gradients and parameters eager
execution gives, step after step, for the MLP, CNN, Transformer, LSTM and vision pipeline."""

import numpy as np
import pytest

import buildingai
import buildingai as bai
import buildingai.nn.functional as F
from buildingai import TensorSpec, float32, int64, nn
from buildingai.graph import GraphError
from buildingai.nn.vision import ImagePreprocessor, ResNetEncoder, image_classifier
from buildingai.train import Config, Trainer

STEPS = 3


def test_the_step_as_users_write_it_matches_eager_bit_for_bit():
    def run(compiled_step: bool):
        bai.manual_seed(0)
        model = nn.Sequential(nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10))
        optimizer = bai.optim.Adam(model.parameters(), lr=1e-3)

        def step(x, y):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            return loss

        if compiled_step:
            compiled = buildingai.compile(step, input_signature=[TensorSpec((None, 784), float32),
                                                                 TensorSpec((None,), int64)])  # fmt: skip
        rng = np.random.default_rng(1)
        losses = []
        for size in (16, 16, 7):  # a last, smaller batch traces the graph once more
            x = bai.tensor(rng.standard_normal((size, 784)).astype(np.float32))
            y = bai.tensor(rng.integers(0, 10, size))
            loss = compiled(x, y) if compiled_step else step(x, y)  # noqa: F821
            losses.append(loss.item())
        grads = [p.grad.numpy().copy() for p in model.parameters()]
        return losses, grads, [p.numpy().copy() for p in model.parameters()], optimizer

    eager, compiled = run(False), run(True)
    assert eager[0] == compiled[0]
    for a, b in zip(eager[1] + eager[2], compiled[1] + compiled[2]):
        np.testing.assert_array_equal(a, b)
    states = [eager[3].state_dict()["state"], compiled[3].state_dict()["state"]]
    for key in states[0]:
        for name in states[0][key]:
            np.testing.assert_array_equal(np.asarray(states[0][key][name]),
                                          np.asarray(states[1][key][name]))  # fmt: skip


# ----- the workloads, compiled against eager ------------------------------------------------------


def mlp():
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 5))


def cnn():
    return nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 8, 3), nn.ReLU(), nn.Flatten(), nn.Dropout(0.1), nn.Linear(8 * 2 * 2, 5),
    )  # fmt: skip


class TinyTransformer(nn.Module):
    def __init__(self, activation: str) -> None:
        super().__init__()
        self.embed = nn.Embedding(20, 16)
        self.encoder = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, activation=activation,
                                                  batch_first=True)  # fmt: skip
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 5)

    def forward(self, tokens):
        return self.head(self.norm(self.encoder(self.embed(tokens))).mean(axis=1))


class LSTMClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, 8, batch_first=True)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


class SplitAttention(nn.Module):
    """nanoGPT's attention: one product for queries, keys and values, split, causal."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.qkv = nn.Linear(8, 24)
        self.head = nn.Linear(8, 5)

    def forward(self, tokens):
        x = self.embed(tokens)
        B, T, C = x.shape
        q, k, v = (t.view(B, T, 2, 4).transpose(1, 2) for t in self.qkv(x).split(8, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.head(y.transpose(1, 2).contiguous().view(B, T, C)).mean(axis=1)


def vision():
    encoder = ResNetEncoder(blocks=[1, 1], block="basic", widths=[4, 8], in_channels=3,
                            stem="cifar")  # fmt: skip
    return image_classifier(encoder, 5, preprocessor=ImagePreprocessor(channels_last=True))


def _float_batch(shape, size, rng):
    return bai.tensor(rng.standard_normal((size, *shape)).astype(np.float32))


WORKLOADS = {
    "mlp": (mlp, lambda n, r: _float_batch((12,), n, r), TensorSpec((None, 12))),
    "cnn": (cnn, lambda n, r: _float_batch((3, 8, 8), n, r), TensorSpec((None, 3, 8, 8))),
    "transformer-gelu": (
        lambda: TinyTransformer("gelu"),
        lambda n, r: bai.tensor(r.integers(0, 20, (n, 6))),
        TensorSpec((None, 6), int64),
    ),
    "transformer-tanh-gelu": (
        lambda: TinyTransformer(lambda t: F.gelu(t, approximate="tanh")),
        lambda n, r: bai.tensor(r.integers(0, 20, (n, 6))),
        TensorSpec((None, 6), int64),
    ),
    "split-attention": (
        SplitAttention,
        lambda n, r: bai.tensor(r.integers(0, 20, (n, 6))),
        TensorSpec((None, 6), int64),
    ),
    "lstm": (LSTMClassifier, lambda n, r: _float_batch((5, 4), n, r), TensorSpec((None, 5, 4))),
    "vision": (
        vision,
        lambda n, r: bai.tensor(r.integers(0, 256, (n, 8, 8, 3)).astype(np.uint8)),
        TensorSpec((None, 8, 8, 3), "uint8"),
    ),
}


def momentum_sgd(params, lr):
    return bai.optim.SGD(params, lr=lr, momentum=0.9)


def train(name: str, compiled_step: bool, optimizer_type=momentum_sgd):
    make_model, make_batch, spec = WORKLOADS[name]
    bai.manual_seed(0)
    model = make_model()
    model.train()
    optimizer = optimizer_type(model.parameters(), lr=1e-2)

    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    run = bai.compile(step, [spec, TensorSpec((None,), int64)]) if compiled_step else step
    rng = np.random.default_rng(3)
    bai.manual_seed(1)  # the dropout masks: both runs draw the same ones in the same order
    losses = [
        run(make_batch(6, rng), bai.tensor(rng.integers(0, 5, 6))).item() for _ in range(STEPS)
    ]
    grads = {k: p.grad.numpy().copy() for k, p in model.named_parameters() if p.grad is not None}
    state = {k: v.numpy().astype(np.float64) for k, v in model.state_dict().items()}
    return losses, grads, state, run


# SGD with momentum: Adam would turn the round-off of gradients that are truly zero (the key
# projection's bias: softmax ignores a shift shared by all keys) into steps of size lr.
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_compiled_steps_equal_eager_steps(name):
    eager_losses, eager_grads, eager_state, _ = train(name, compiled_step=False)
    losses, grads, state, compiled = train(name, compiled_step=True)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5, atol=1e-6)
    assert grads.keys() == eager_grads.keys()
    for key in grads:
        np.testing.assert_allclose(grads[key], eager_grads[key], rtol=1e-4, atol=1e-6, err_msg=key)
    assert state.keys() == eager_state.keys()
    for key in state:  # parameters and buffers (BatchNorm's running statistics) alike
        np.testing.assert_allclose(state[key], eager_state[key], rtol=1e-4, atol=1e-6, err_msg=key)
    assert len(compiled.graphs) == 1


def test_the_gradient_of_a_split_is_assembled_by_one_concatenation():
    *_, compiled = train("split-attention", compiled_step=True)
    names = [node.op.name for node in compiled.graph.nodes]
    assert "concatenate" in names and "zeros_index_add" not in names


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_mlp_and_cnn_steps_are_bit_identical(name):
    eager, compiled = train(name, False, bai.optim.SGD), train(name, True, bai.optim.SGD)
    assert eager[0] == compiled[0]
    for key in eager[2]:
        np.testing.assert_array_equal(eager[2][key], compiled[2][key], err_msg=key)


# ----- what the graph holds ----------------------------------------------------------------------


def test_summary_lists_nodes_flops_and_the_memory_plan():
    *_, compiled = train("mlp", compiled_step=True)
    text = compiled.summary()
    for expected in ("linear", "matmul", "optimizer_step", "bernoulli_mask", "FLOPs", "memory plan",
                     "peak", "parameters"):  # fmt: skip
        assert expected in text, expected
    plan = compiled.memory_plan()
    assert plan["peak"] > 0 and plan["parameters"] == sum(
        p.array.nbytes for p in compiled.parameters
    )


def test_dropout_draws_a_fresh_mask_on_every_call():
    bai.manual_seed(0)
    model = nn.Sequential(nn.Dropout(0.5), nn.Linear(64, 1))
    optimizer = bai.optim.SGD(model.parameters(), lr=0.0)

    def step(x):
        optimizer.zero_grad()
        out = model(x).sum()
        out.backward()
        optimizer.step()
        return out

    compiled = bai.compile(step, [TensorSpec((1, 64))])
    x = bai.ones(1, 64)
    assert len({compiled(x).item() for _ in range(5)}) > 1


def test_a_branch_on_a_tensor_value_is_refused_with_its_line():
    model = nn.Linear(3, 1)
    optimizer = bai.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        optimizer.zero_grad()
        loss = model(x).sum()
        if loss > 0:  # a Python branch on a value
            loss = loss * 2
        loss.backward()
        optimizer.step()
        return loss

    with pytest.raises(GraphError, match=r"test_compile\.py:\d+.*if loss > 0"):
        bai.compile(step, [TensorSpec((None, 3))])(bai.ones(2, 3))


def test_a_step_without_an_optimizer_update_is_refused():
    model = nn.Linear(3, 1)
    with pytest.raises(GraphError, match="no optimizer.step"):
        bai.compile(lambda x: model(x).sum(), [TensorSpec((2, 3))])(bai.ones(2, 3))


def test_parameters_written_behind_dispatchs_back_are_refused_and_restored():
    model = nn.Linear(3, 1)
    optimizer = bai.optim.SGD(model.parameters(), lr=0.1)
    before = model.weight.numpy().copy()

    def step(x):
        optimizer.zero_grad()
        loss = model(x).sum()
        loss.backward()
        model.weight.array[...] = 0.0  # not an op: a graph cannot repeat it
        optimizer.step()
        return loss

    with pytest.raises(GraphError, match="changed parameters outside the ops"):
        bai.compile(step, [TensorSpec((2, 3))])(bai.ones(2, 3))
    np.testing.assert_array_equal(model.weight.numpy(), before)


def test_gradient_clipping_runs_inside_the_update_and_its_norm_cannot_be_read():
    def run(compiled_step: bool, read_norm: bool = False):
        bai.manual_seed(0)
        model = nn.Linear(4, 2)
        optimizer = bai.optim.SGD(model.parameters(), lr=0.5)

        def step(x):
            optimizer.zero_grad()
            loss = (model(x) ** 2).sum() * 100
            loss.backward()
            norm = bai.optim.clip_grad_norm_(model.parameters(), 0.1)
            if read_norm:
                print(norm.item())
            optimizer.step()
            return loss

        call = bai.compile(step, [TensorSpec((3, 4))]) if compiled_step else step
        x = bai.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
        losses = [call(x).item() for _ in range(3)]
        return losses, model.weight.numpy().copy()

    eager, compiled = run(False), run(True)
    assert eager[0] == compiled[0]
    np.testing.assert_array_equal(eager[1], compiled[1])
    with pytest.raises(GraphError, match="item"):
        run(True, read_norm=True)


def test_parameters_that_share_one_gradient_value_are_clipped_once_each():
    """Two biases added to one output (an LSTM's b_ih and b_hh) have one gradient value; the
    compiled update gives each its own memory, so clipping in place scales each once."""

    class TwoBiases(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(bai.tensor(np.linspace(-1, 1, 8, dtype=np.float32)))
            self.first = nn.Parameter(bai.zeros(8))
            self.second = nn.Parameter(bai.zeros(8))

        def forward(self, x):
            return x * self.weight + self.first + self.second

    def run(compiled_step: bool):
        model = TwoBiases()
        optimizer = bai.optim.SGD(model.parameters(), lr=0.5)

        def step(x):
            optimizer.zero_grad()
            loss = (model(x) ** 2).sum() * 100
            loss.backward()
            bai.optim.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            return loss

        call = bai.compile(step, [TensorSpec((8,))]) if compiled_step else step
        x = bai.tensor(np.linspace(-1, 1, 8, dtype=np.float32))  # no batch: no sum_to apart
        losses = [call(x).item() for _ in range(3)]
        return losses, [p.numpy().copy() for p in model.parameters()]

    (eager_losses, eager), (compiled_losses, compiled) = run(False), run(True)
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-6)
    for mine, expected in zip(compiled, eager):
        np.testing.assert_allclose(mine, expected, rtol=1e-6, atol=1e-7)


def test_a_compiled_trainer_matches_an_eager_one():
    def fit(compile_steps: bool):
        config = Config(
            epochs=2, batch_size=16, progress=False, seed=0, compile=compile_steps,
            grad_clip=0.5, scheduler=dict(type="CosineAnnealingLR", T_max=2),
            data=dict(train=dict(type="Spirals", n=100, seed=0), eval=dict(type="Spirals", n=40, seed=1)),
            model=dict(type="MLP", in_features=2, hidden=[16, 16], out_features=3, dropout=0.1),
        )  # fmt: skip
        trainer = Trainer.from_config(config, verbose=False)
        metrics = trainer.fit()
        return metrics, [p.numpy().copy() for p in trainer.model.parameters()], trainer

    eager, compiled = fit(False), fit(True)
    assert eager[0] == compiled[0]
    for a, b in zip(eager[1], compiled[1]):
        np.testing.assert_array_equal(a, b)
    assert len(compiled[2]._compiled.graphs) == 2  # 100 = 6 x 16 + 4: the last batch is smaller


def test_compile_refuses_a_signature_that_is_not_tensor_specs():
    with pytest.raises(GraphError, match=r"input_signature\[0\].*TensorSpec"):
        bai.compile(lambda x: x, [(None, 3)])


def test_freeze_with_train_true_runs_a_models_training_step():
    def run(frozen: bool):
        bai.manual_seed(0)
        model = mlp()
        optimizer = bai.optim.SGD(model.parameters(), lr=0.1)
        rng = np.random.default_rng(0)
        batches = [
            (_float_batch((12,), 5, rng), bai.tensor(rng.integers(0, 5, 5))) for _ in range(3)
        ]
        if frozen:
            step = bai.freeze(model, [TensorSpec((None, 12)), TensorSpec((None,), int64)],
                              train=True, optimizer=optimizer)  # fmt: skip
        else:

            def step(x, y):
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
                return loss

        bai.manual_seed(1)
        losses = [step(x, y).item() for x, y in batches]
        return losses, [p.numpy().copy() for p in model.parameters()]

    eager, frozen = run(False), run(True)
    assert eager[0] == frozen[0]
    for a, b in zip(eager[1], frozen[1]):
        np.testing.assert_array_equal(a, b)
