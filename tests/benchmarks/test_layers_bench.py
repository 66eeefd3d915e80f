"""The layer benchmarks run end to end at tiny sizes (no timing assertions)."""

from benchmarks import layers as benchmark


def test_conv2d_quick_mode_produces_records():
    records = benchmark.bench_conv2d(quick=True)
    assert records
    for record in records:
        assert record["buildingai"]["median"] > 0 and record["pytorch"]["median"] > 0
        assert record["ratio"] > 0


def test_depthwise_quick_mode_produces_records():
    records = benchmark.bench_depthwise(quick=True)
    assert [r["case"].split(" ")[0] for r in records] == ["depthwise"]
    for record in records:
        assert record["buildingai"]["median"] > 0 and record["pytorch"]["median"] > 0


def test_pooling_quick_mode_produces_records():
    records = benchmark.bench_pooling(quick=True)
    names = [r["case"].split(" ")[0] for r in records]
    assert names == ["max_pool2d", "max_pool2d", "avg_pool2d", "adaptive_max_pool2d"]
    for record in records:
        assert record["buildingai"]["median"] > 0 and record["pytorch"]["median"] > 0


def test_attention_quick_mode_produces_records():
    records = benchmark.bench_attention(quick=True)
    assert records
    for record in records:
        assert record["buildingai"]["median"] > 0 and record["pytorch"]["median"] > 0
        assert record["ratio"] > 0


def test_lstm_quick_mode_produces_records():
    records = benchmark.bench_lstm(quick=True)
    assert len(records) == 1
    record = records[0]
    assert record["buildingai"]["median"] > 0 and record["pytorch"]["median"] > 0
    assert record["ratio"] > 0


def test_elementwise_quick_mode_produces_records():
    records = benchmark.bench_elementwise(quick=True)
    names = [r["case"].split(" ")[0] for r in records]
    assert names == ["tanh-GELU", "softmax", "log_softmax", "layer_norm", "cross_entropy"]
    for record in records:
        assert record["buildingai"]["median"] > 0 and record["pytorch"]["median"] > 0


def test_recurrent_quick_mode_produces_records():
    records = benchmark.bench_gru(quick=True) + benchmark.bench_rnn(quick=True)
    records += benchmark.bench_cells(quick=True)
    names = [r["case"].split("(")[0] for r in records]
    assert names == ["GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"]
    for record in records:
        assert record["buildingai"]["median"] > 0 and record["pytorch"]["median"] > 0


def test_only_runs_the_cases_named():
    records = benchmark.run(quick=True, only=["gru"])
    assert [r["case"].split("(")[0] for r in records] == ["GRU"]
