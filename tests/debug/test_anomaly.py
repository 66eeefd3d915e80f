"""detect_anomaly: the first op that makes NaN/Inf out of finite values is named, with its module
path, the user's line, the input ranges and a likely cause, in forward and backward; per thread,
and free when off."""

import threading

import numpy as np
import pytest

import buildingai as bai
from buildingai.autograd import dispatch, engine
from buildingai.debug import AnomalyError, detect_anomaly, is_anomaly_enabled, set_detect_anomaly

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's divide/overflow notes


def leaf(values, dtype=np.float64):
    return bai.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def this_line_containing(text: str) -> str:
    """``test_anomaly.py:N`` for the line of this file that contains ``text``."""
    with open(__file__) as source:
        for number, line in enumerate(source, start=1):
            if text in line and "this_line_containing" not in line:
                return f"test_anomaly.py:{number}"
    raise AssertionError(f"no line contains {text!r}")


def test_log_of_zero_names_the_op_the_line_the_inputs_and_the_cause():
    x = leaf([0.0, 1.0, 2.0])
    with pytest.raises(AnomalyError) as caught, detect_anomaly():
        x.log()  # the log line
    error = caught.value
    message = str(error)
    assert message.startswith("[log] produced 1 Inf (of 3 values) from finite inputs")
    assert this_line_containing("x.log()  # the log line") in message
    assert "x.log()  # the log line" in message  # the source text itself
    assert "input 0: float64 (3,), min 0, max 2" in message
    assert "likely cause: log of a value <= 0 (smallest input 0)" in message
    assert "help: clamp the input first" in message
    assert (error.op, error.phase, error.forward_op) == ("log", "forward", None)
    assert isinstance(error, bai.BuildingAIError)


def test_division_by_almost_zero():
    a, b = leaf([1e10, 2.0], dtype=np.float32), leaf([1e-30, 3.0], dtype=np.float32)
    with pytest.raises(AnomalyError) as caught, detect_anomaly():
        a / b  # 1e40 does not fit in float32
    message = str(caught.value)
    assert "[div] produced 1 Inf (of 2 values) from finite inputs" in message
    assert "likely cause: division by ~0 (smallest |divisor| = 1e-30)" in message
    assert "input 1: float32 (2,), min 1e-30, max 3" in message


def test_zero_over_zero_is_named_as_such():
    a, b = leaf([0.0, 2.0]), leaf([0.0, 3.0])
    with (
        pytest.raises(AnomalyError, match=r"produced 1 NaN .* from finite inputs(.|\n)*0 / 0"),
        detect_anomaly(),
    ):
        a / b


def test_exp_overflow_in_float32():
    x = leaf([1.0, 100.0], dtype=np.float32)
    with pytest.raises(AnomalyError) as caught, detect_anomaly():
        x.exp()
    message = str(caught.value)
    assert "[exp] produced 1 Inf" in message
    assert (
        "exp overflow: largest input 100 > 88.72, the largest exponent float32 can hold" in message
    )
    assert "input 0: float32 (2,), min 1, max 100" in message


def test_exp_in_float64_holds_what_float32_cannot():
    x = leaf([1.0, 100.0], dtype=np.float64)
    with detect_anomaly():
        y = x.exp()
    assert np.isfinite(y.array).all()


def test_sqrt_of_a_negative_value():
    x = leaf([4.0, -1.0])
    with (
        pytest.raises(AnomalyError, match=r"(?s)\[sqrt\] produced 1 NaN.*sqrt of a negative"),
        detect_anomaly(),
    ):
        x.sqrt()


def test_inf_minus_inf_is_the_first_producer_of_nan():
    x = bai.tensor([np.inf, 1.0])  # infinite values given as data: no op produced them
    with detect_anomaly():
        doubled = x * 2  # inf in, inf out: not an anomaly
        with pytest.raises(AnomalyError) as caught:
            doubled - x
    message = str(caught.value)
    assert "[sub] produced 1 NaN (of 2 values) from infinite inputs" in message
    assert "likely cause: inf - inf" in message
    assert "(0 NaN, 1 Inf)" in message  # the input ranges count the infinities


def test_zero_times_inf():
    x, y = bai.tensor([np.inf, 1.0]), bai.tensor([0.0, 2.0])
    with pytest.raises(AnomalyError, match="likely cause: 0 \\* inf"), detect_anomaly():
        x * y


def test_pow_overflow():
    x = leaf([10.0, 2.0], dtype=np.float32)
    with (
        pytest.raises(AnomalyError, match=r"(?s)\[pow\].*pow overflow: \|base\| up to 10"),
        detect_anomaly(),
    ):
        x**100


def test_inputs_already_holding_nan_do_not_stop_and_the_producer_is_named():
    x = leaf([-1.0, 4.0])
    with detect_anomaly(False):  # no detection: the NaN is made silently
        poisoned = x.sqrt()
    with detect_anomaly():
        result = (poisoned * 3 + 1).exp()  # NaN flows through without stopping
        assert np.isnan(result.array[0])
        with pytest.raises(AnomalyError, match=r"^\[sqrt\]"):
            x.sqrt()  # the op that makes the NaN is the one named


def test_a_nan_first_made_in_backward_names_the_backward_op_and_the_forward_line():
    x = leaf([0.0, 1.0, 4.0])
    with detect_anomaly():
        root = x.sqrt()  # the forward sqrt
        loss = root.sum()
        assert np.isfinite(loss.array).all()  # forward is finite everywhere
        with pytest.raises(AnomalyError) as caught:
            loss.backward()
    error = caught.value
    message = str(error)
    assert message.startswith("[div] in the backward of 'sqrt' produced 1 Inf")
    assert "differentiating 'sqrt' created at tests/debug/" in message
    assert this_line_containing("# the forward sqrt") in message
    assert "the derivative of sqrt is infinite where its input is 0" in message
    assert (error.phase, error.forward_op, error.op) == ("backward", "sqrt", "div")
    assert engine.running_node() is None  # the engine restored it when the rule raised


def test_a_backward_anomaly_without_a_recorded_forward_line_says_so():
    x = leaf([0.0, 1.0])
    loss = x.sqrt().sum()  # recorded while detection was off: no line kept
    with (
        pytest.raises(AnomalyError, match="ran outside detect_anomaly\\(\\), so its line"),
        detect_anomaly(),
    ):
        loss.backward()


class Scorer(bai.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = bai.nn.Linear(2, 1)

    def forward(self, x):
        return self.head(x).log()  # the module's log


class Model(bai.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scorer = Scorer()

    def forward(self, x):
        return self.scorer(x)


def test_inside_a_module_the_message_names_the_module_path_and_the_layer_line():
    model = Model()
    with bai.no_grad():
        model.scorer.head.weight.copy_(bai.tensor([[1.0, -1.0]]))
        model.scorer.head.bias.zero_()
    with pytest.raises(AnomalyError) as caught, detect_anomaly():
        model(bai.tensor([[1.0, 1.0]]))  # head gives 0: log(0)
    first_line = str(caught.value).splitlines()[0]
    assert first_line.endswith("(in Model.scorer)")
    assert this_line_containing("# the module's log") in str(caught.value)


class Rooter(bai.nn.Module):
    def forward(self, x):
        return x.sqrt()  # the rooter's sqrt


class Net(bai.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rooter = Rooter()

    def forward(self, x):
        return self.rooter(x).sum()


def test_a_backward_anomaly_names_the_module_path_and_line_of_its_forward():
    with detect_anomaly():
        loss = Net()(leaf([0.0, 1.0]))
        with pytest.raises(AnomalyError) as caught:
            loss.backward()  # outside any module call
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("[div] in the backward of 'sqrt'")
    assert lines[0].endswith("(in Net.rooter)")
    assert this_line_containing("# the rooter's sqrt") in lines[1]


def test_the_global_switch_turns_detection_on_and_off_for_this_thread():
    x = leaf([0.0])
    assert not is_anomaly_enabled()
    detect_anomaly(True)
    try:
        assert is_anomaly_enabled()
        with pytest.raises(AnomalyError):
            x.log()
    finally:
        detect_anomaly(False)
    assert not is_anomaly_enabled()
    assert np.isneginf(x.log().array).all()  # off: no check


def test_set_detect_anomaly_as_a_context_manager_restores_the_previous_setting():
    with set_detect_anomaly(True):
        assert is_anomaly_enabled()
        with set_detect_anomaly(False):
            assert not is_anomaly_enabled()
        assert is_anomaly_enabled()
    assert not is_anomaly_enabled()


def test_nested_blocks_keep_one_detector_after_other_modes():
    observer = dispatch.DispatchMode()
    with bai.dispatch_mode(observer), detect_anomaly(), detect_anomaly():
        interceptors = dispatch.active_modes()
        assert interceptors[0] is observer and len(interceptors) == 2
    assert dispatch.active_modes() == ()


def test_off_costs_nothing_no_interceptor_and_no_engine_tracking():
    seen = []

    class Spy(dispatch.DispatchMode):
        def after_op(self, op, inputs, output, attrs):
            seen.append((op.name, engine.running_node()))

    with detect_anomaly():
        pass
    assert dispatch.active_modes() == ()
    assert not dispatch._current_state().observed  # the fast paths stay open

    x = leaf([1.0, 2.0])
    loss = (x * x).sum()
    with bai.dispatch_mode(Spy()):
        loss.backward()
    assert [name for name, node in seen if node is not None]  # observed: the node is known
    assert engine.running_node() is None


def test_the_engine_names_the_node_whose_backward_runs():
    seen = []

    class Spy(dispatch.DispatchMode):
        def after_op(self, op, inputs, output, attrs):
            node = engine.running_node()
            seen.append((op.name, None if node is None else node.op.name))

    x = leaf([1.0, 2.0])
    loss = x.exp().sum()
    with bai.dispatch_mode(Spy()):
        loss.backward()
    assert ("mul", "exp") in seen  # exp's rule: grad * output


def test_a_block_on_one_thread_leaves_another_thread_unchecked():
    inside, release = threading.Event(), threading.Event()
    results = {}

    def other_thread():
        inside.wait(5)
        results["enabled"] = is_anomaly_enabled()
        results["log"] = leaf([0.0]).log().array  # no AnomalyError here
        release.set()

    worker = threading.Thread(target=other_thread)
    worker.start()
    with detect_anomaly():
        inside.set()
        release.wait(5)
        with pytest.raises(AnomalyError):
            leaf([0.0]).log()
    worker.join(5)
    assert results["enabled"] is False
    assert np.isneginf(results["log"]).all()


def test_masked_values_and_factories_are_not_anomalies():
    scores = leaf([[1.0, 2.0, 3.0]])
    mask = np.array([[False, True, False]])
    with detect_anomaly():
        masked = scores.masked_fill(bai.tensor(mask), float("-inf"))  # -inf comes as a value
        weights = masked.softmax(-1)
        weights.sum().backward()
        bai.full((2,), float("nan"))  # asked for
    assert np.isfinite(scores.grad.array).all()


def test_a_fully_masked_softmax_row_is_named():
    scores = bai.tensor([[float("-inf"), float("-inf")]])
    with (
        pytest.raises(AnomalyError, match=r"(?s)\[softmax\].*every value is -inf"),
        detect_anomaly(),
    ):
        scores.softmax(-1)


def test_freeze_traces_with_sample_inputs_without_false_alarms():
    with detect_anomaly():
        frozen = bai.freeze(lambda x: x.log().sum(), [bai.TensorSpec((3,), "float32")])
        assert np.isclose(frozen(bai.tensor([1.0, 2.0, 3.0])).item(), np.log(6.0))


def test_without_observers_the_engine_does_not_track_the_running_node():
    seen = []
    x = leaf([1.0, 2.0])
    middle = x * 3
    middle.register_hook(lambda gradient: seen.append(engine.running_node()))
    middle.sum().backward()
    with detect_anomaly():
        middle = x * 3
        middle.register_hook(lambda gradient: seen.append(engine.running_node()))
        middle.sum().backward()
    assert seen[0] is None  # off: nothing is written per node
    assert seen[1] is middle._node  # on: the node whose gradient the hook receives


def test_the_global_switch_does_not_reach_threads_started_later():
    results = {}

    def other_thread():
        results["enabled"] = is_anomaly_enabled()
        results["log"] = leaf([0.0]).log().array

    detect_anomaly(True)
    try:
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join(5)
    finally:
        detect_anomaly(False)
    assert results["enabled"] is False
    assert np.isneginf(results["log"]).all()


@pytest.mark.filterwarnings("ignore::UserWarning")  # PyTorch announces its mode and the error
def test_a_backward_nan_that_pytorch_anomaly_mode_also_stops_at():
    torch = pytest.importorskip("torch")
    theirs = torch.tensor([0.0, 2.0], dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned nan values"), torch.autograd.detect_anomaly():
        (theirs**2).sqrt().sum().backward()  # sqrt's inf times pow's 2x = 0 * inf

    ours = leaf([0.0, 2.0])
    with detect_anomaly():
        loss = (ours**2).sqrt().sum()  # the norm-like line
        with pytest.raises(AnomalyError) as caught:
            loss.backward()
    error = caught.value
    assert (error.phase, error.forward_op) == ("backward", "sqrt")  # the inf, before the NaN
    assert this_line_containing("# the norm-like line") in str(error)


@pytest.mark.skipif(bai.backend.dtypes.bfloat16 is None, reason="bfloat16 needs ml_dtypes")
def test_bfloat16_overflow_is_checked_with_its_own_limits():
    x = bai.tensor([1.0, 100.0]).astype(bai.bfloat16)
    with pytest.raises(AnomalyError) as caught, detect_anomaly():
        x.exp()
    message = str(caught.value)
    assert "input 0: bfloat16 (2,), min 1, max 100" in message
    assert "the largest exponent bfloat16 can hold" in message


def test_a_mean_over_nothing_is_named():
    logits = leaf(np.zeros((2, 3)))
    with (
        pytest.raises(AnomalyError, match="every target equals ignore_index \\(-100\\)"),
        detect_anomaly(),
    ):
        bai.nn.functional.cross_entropy(logits, bai.tensor(np.array([-100, -100])))
    with (
        pytest.raises(AnomalyError, match="var of 1 value\\(s\\) with correction=1"),
        detect_anomaly(),
    ):
        leaf([2.0]).var()
    with pytest.raises(AnomalyError, match="mean over no elements"), detect_anomaly():
        leaf(np.zeros((0, 3))).mean()
