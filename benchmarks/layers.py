"""Layer benchmarks: forward + backward of standard layers, BuildingAI against PyTorch on the
same machine in the same run (interleaved timing, medians).

Each ``bench_*(quick)`` function returns a list of records ``{"case", "buildingai", "pytorch",
"ratio"}`` (timings are ``measure`` dicts in seconds); ``main`` runs every one present.

Run: ``python -m benchmarks.layers [--quick] [--threads 1,2] [--only gru,cells]
[--clock thread]``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import buildingai as bai

from .common import accelerate, environment, format_table, measure, set_threads, settle_for

# the clock ``measure`` reads, set by ``main``'s --clock
_CLOCK = {"clock": time.perf_counter}

# ----- conv2d -----------------------------------------------------------------------------------


def conv_steps(torch, x_shape, out_channels, kernel, padding, stride=1, groups=1):
    """(run_ours, run_theirs, x, w): forward + backward (input, weight and bias gradients) of
    one Conv2d with bias, ours and torch.nn.functional.conv2d's, from the same float32 data."""
    from buildingai.nn import functional as F

    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w_shape = (out_channels, x_shape[1] // groups, kernel, kernel)
    w = (rng.standard_normal(w_shape) * 0.1).astype(np.float32)
    b = np.zeros(out_channels, np.float32)
    ours = [bai.Tensor(a, requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    options = {"stride": stride, "padding": padding, "groups": groups}

    def run_ours():
        y = F.conv2d(*ours, **options)
        bai.grad(y, ours, grad_outputs=bai.ones_like(y))

    def run_theirs():
        y = torch.nn.functional.conv2d(*theirs, **options)
        torch.autograd.grad(y, theirs, grad_outputs=torch.ones_like(y))

    return run_ours, run_theirs, x, w


def _conv_case(torch, x_shape, out_channels, kernel, padding, quick, stride=1, groups=1):
    """Forward + backward of one Conv2d (with bias), ours against torch.nn.functional.conv2d."""
    in_channels = x_shape[1]
    run_ours, run_theirs, _, _ = conv_steps(
        torch, x_shape, out_channels, kernel, padding, stride, groups
    )
    timings = measure(
        {"buildingai": run_ours, "pytorch": run_theirs},
        repeats=3 if quick else 5,
        number=1 if quick else 3,
        settle=settle_for(quick),
        clock=_CLOCK["clock"],
    )
    kind = "depthwise conv2d" if groups == in_channels > 1 else "conv2d"
    case = f"{kind} {in_channels}->{out_channels} {kernel}x{kernel} pad {padding} on {x_shape}"
    if stride != 1:
        case += f", stride {stride}"
    if 1 < groups != in_channels:
        case += f", groups {groups}"
    return {
        "case": case,
        **timings,
        "ratio": timings["buildingai"]["median"] / timings["pytorch"]["median"],
    }


def bench_conv2d(quick: bool = False) -> list[dict]:
    """Conv2d(32->64, 3x3, pad 1) forward+backward on (64, 32, 28, 28), and the two convolutions
    of a small MNIST CNN (1->32 on 28x28, 32->64 on 14x14), against PyTorch."""
    import torch

    if quick:
        shapes = [((2, 4, 8, 8), 8, 3, 1)]
    else:
        shapes = [
            ((64, 32, 28, 28), 64, 3, 1),
            ((64, 1, 28, 28), 32, 3, 1),  # cnn step, first convolution
            ((64, 32, 14, 14), 64, 3, 1),  # cnn step, second convolution (after 2x2 pooling)
        ]
    return [_conv_case(torch, *shape, quick) for shape in shapes]


def bench_depthwise(quick: bool = False) -> list[dict]:
    """Depthwise Conv2d (groups = channels) forward+backward: MobileNet's 3x3 at strides 1 and 2
    on (32, 64, 56, 56), and ConvNeXt's 7x7 on (16, 96, 28, 28), against PyTorch."""
    import torch

    if quick:
        return [_conv_case(torch, (2, 4, 8, 8), 4, 3, 1, quick, groups=4)]
    cases = [((32, 64, 56, 56), 3, 1, 1), ((32, 64, 56, 56), 3, 1, 2), ((16, 96, 28, 28), 7, 3, 1)]
    return [
        _conv_case(torch, shape, shape[1], kernel, padding, quick, stride, groups=shape[1])
        for shape, kernel, padding, stride in cases
    ]


def bench_pooling(quick: bool = False) -> list[dict]:
    """Pooling forward+backward: max pooling 3x3 of stride 2 with padding 1 (ResNet's stem) and
    overlapping 3x3 windows of stride 1, average pooling 3x3 of stride 2, and a global maximum
    (adaptive max pooling to 1x1), against PyTorch."""
    import torch

    from buildingai.nn import functional as F

    tf = torch.nn.functional
    image, small = ((2, 3, 9, 9), (2, 4, 3, 3)) if quick else ((32, 64, 56, 56), (32, 512, 7, 7))
    cases = [
        ("max_pool2d 3x3 stride 2 pad 1", lambda x: F.max_pool2d(x, 3, 2, 1),
         lambda x: tf.max_pool2d(x, 3, 2, 1), image),
        ("max_pool2d 3x3 stride 1 pad 1", lambda x: F.max_pool2d(x, 3, 1, 1),
         lambda x: tf.max_pool2d(x, 3, 1, 1), image),
        ("avg_pool2d 3x3 stride 2 pad 1", lambda x: F.avg_pool2d(x, 3, 2, 1),
         lambda x: tf.avg_pool2d(x, 3, 2, 1), image),
        ("adaptive_max_pool2d to 1x1", lambda x: F.adaptive_max_pool2d(x, 1),
         lambda x: tf.adaptive_max_pool2d(x, 1), small),
    ]  # fmt: skip
    return [_pooling_case(torch, *case, quick) for case in cases]


def _pooling_case(torch, case, ours_fn, theirs_fn, shape, quick):
    """Forward + backward of one pooling of a float32 image of ``shape``, the output's gradient
    ones, ours against PyTorch's."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ours, theirs = bai.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)

    def run_ours():
        y = ours_fn(ours)
        bai.grad(y, [ours], grad_outputs=bai.ones_like(y))

    def run_theirs():
        y = theirs_fn(theirs)
        torch.autograd.grad(y, [theirs], grad_outputs=torch.ones_like(y))

    return _ours_against_theirs(f"{case} on {shape}", run_ours, run_theirs, quick)


# ----- multi-head attention ----------------------------------------------------------------------


def _attention_case(torch, x_shape, embed_dim, num_heads, need_weights, quick):
    """Forward + backward (input and every parameter) of MultiheadAttention(batch_first=True)
    as self-attention, ours against torch.nn.MultiheadAttention with the same weights."""
    from buildingai.nn.attention import MultiheadAttention

    torch.manual_seed(0)
    theirs_layer = torch.nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
    ours_layer = MultiheadAttention(embed_dim, num_heads, batch_first=True)
    ours_layer.load_state_dict({k: v.numpy() for k, v in theirs_layer.state_dict().items()})
    x = np.random.default_rng(0).standard_normal(x_shape).astype(np.float32)
    ours_x = bai.Tensor(x, requires_grad=True)
    theirs_x = torch.tensor(x, requires_grad=True)
    ours_inputs = [ours_x, *ours_layer.parameters()]
    theirs_inputs = [theirs_x, *theirs_layer.parameters()]

    def run_ours():
        y = ours_layer(ours_x, ours_x, ours_x, need_weights=need_weights)[0]
        bai.grad(y, ours_inputs, grad_outputs=bai.ones_like(y))

    def run_theirs():
        y = theirs_layer(theirs_x, theirs_x, theirs_x, need_weights=need_weights)[0]
        torch.autograd.grad(y, theirs_inputs, grad_outputs=torch.ones_like(y))

    timings = measure(
        {"buildingai": run_ours, "pytorch": run_theirs},
        repeats=3 if quick else 7,
        number=1 if quick else 5,
        settle=settle_for(quick),
        clock=_CLOCK["clock"],
    )
    case = (
        f"MultiheadAttention({embed_dim}, {num_heads}) self-attention on {x_shape}, "
        f"need_weights={need_weights}"
    )
    return {
        "case": case,
        **timings,
        "ratio": timings["buildingai"]["median"] / timings["pytorch"]["median"],
    }


def bench_attention(quick: bool = False) -> list[dict]:
    """MultiheadAttention(128, 4, batch_first=True) forward+backward on (32, 64, 128), without
    the attention weights (the transformer-layer path, PyTorch's fused kernel) and with them
    (PyTorch's explicit path), against PyTorch."""
    import torch

    if quick:
        return [_attention_case(torch, (2, 5, 8), 8, 2, False, quick)]
    return [
        _attention_case(torch, (32, 64, 128), 128, 4, need_weights, quick)
        for need_weights in (False, True)
    ]


# ----- recurrent layers and cells ---------------------------------------------------------------


def _recurrent_case(torch, ours_layer, theirs_layer, x, run_ours_layer, run_theirs_layer, label,
                    quick):  # fmt: skip
    """Forward + backward (input and every parameter) of one recurrent layer or cell loop, ours
    against PyTorch's with the same weights; ``run_*_layer(layer, x)`` gives the output."""
    ours_layer.load_state_dict({k: v.numpy() for k, v in theirs_layer.state_dict().items()})
    ours_x = bai.Tensor(x, requires_grad=True)
    theirs_x = torch.tensor(x, requires_grad=True)
    ours_inputs = [ours_x, *ours_layer.parameters()]
    theirs_inputs = [theirs_x, *theirs_layer.parameters()]

    def run_ours():
        y = run_ours_layer(ours_layer, ours_x)
        bai.grad(y, ours_inputs, grad_outputs=bai.ones_like(y))

    def run_theirs():
        y = run_theirs_layer(theirs_layer, theirs_x)
        torch.autograd.grad(y, theirs_inputs, grad_outputs=torch.ones_like(y))

    timings = measure(
        {"buildingai": run_ours, "pytorch": run_theirs},
        repeats=3 if quick else 7,
        number=1 if quick else 5,
        settle=settle_for(quick),
        clock=_CLOCK["clock"],
    )
    ratio = timings["buildingai"]["median"] / timings["pytorch"]["median"]
    return {"case": label, **timings, "ratio": ratio}


def _recurrent_sizes(quick: bool) -> tuple[int, int, int, int]:
    """(length, batch, features, hidden) of the recurrent cases."""
    return (3, 2, 4, 8) if quick else (32, 32, 64, 128)


def _sequence_layer_case(kind: str, quick: bool) -> dict:
    """``kind`` ('LSTM', 'GRU' or 'RNN'), one layer of (features, hidden), over a (length,
    batch, features) sequence: the output sequence's gradient is ones."""
    import torch

    from buildingai.nn import rnn

    length, batch, features, hidden = _recurrent_sizes(quick)
    torch.manual_seed(0)
    theirs_layer = getattr(torch.nn, kind)(features, hidden)
    ours_layer = getattr(rnn, kind)(features, hidden)
    x = np.random.default_rng(0).standard_normal((length, batch, features)).astype(np.float32)
    return _recurrent_case(
        torch,
        ours_layer,
        theirs_layer,
        x,
        lambda layer, x: layer(x)[0],
        lambda layer, x: layer(x)[0],
        f"{kind}({features}, {hidden}) on ({length}, {batch}, {features})",
        quick,
    )


def bench_lstm(quick: bool = False) -> list[dict]:
    """LSTM(64, 128, 1 layer) forward+backward (input and every parameter) on a (32, 32, 64)
    sequence (seq, batch, features), against torch.nn.LSTM with the same weights."""
    return [_sequence_layer_case("LSTM", quick)]


def bench_gru(quick: bool = False) -> list[dict]:
    """GRU(64, 128) forward+backward on (32, 32, 64), as ``bench_lstm``."""
    return [_sequence_layer_case("GRU", quick)]


def bench_rnn(quick: bool = False) -> list[dict]:
    """RNN(64, 128) (tanh) forward+backward on (32, 32, 64), as ``bench_lstm``."""
    return [_sequence_layer_case("RNN", quick)]


def _cell_loop(layer, x, stack):
    """The loop users write around a cell: one call per step of x (L, N, I) from zero states,
    every step's h stacked into (L, N, H)."""
    state = None
    outputs = []
    for t in range(x.shape[0]):
        state = layer(x[t], state)
        outputs.append(state[0] if isinstance(state, tuple) else state)
    return stack(outputs)


def bench_cells(quick: bool = False) -> list[dict]:
    """LSTMCell, GRUCell and RNNCell (64, 128) called step by step over a (32, 32, 64)
    sequence, as a user's loop does (``x[t]`` per step, states carried, every h stacked),
    forward + backward of the stacked outputs, against PyTorch's cells in the same loop."""
    import torch

    from buildingai.nn import rnn

    length, batch, features, hidden = _recurrent_sizes(quick)
    x = np.random.default_rng(0).standard_normal((length, batch, features)).astype(np.float32)
    records = []
    for kind in ("LSTMCell", "GRUCell", "RNNCell"):
        torch.manual_seed(0)
        label = f"{kind}({features}, {hidden}) x {length} steps of ({batch}, {features})"
        records.append(
            _recurrent_case(
                torch,
                getattr(rnn, kind)(features, hidden),
                getattr(torch.nn, kind)(features, hidden),
                x,
                lambda layer, x: _cell_loop(layer, x, bai.stack),
                lambda layer, x: _cell_loop(layer, x, torch.stack),
                label,
                quick,
            )
        )
    return records


# ----- element-wise layers -------------------------------------------------------------------------


def _elementwise_case(torch, case, ours_fn, theirs_fn, shapes, quick):
    """Forward + backward of one element-wise function of float32 inputs of ``shapes`` (the
    first is the activation, the rest parameters), ours against PyTorch's."""
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    ours = [bai.Tensor(v, requires_grad=True) for v in values]
    theirs = [torch.tensor(v, requires_grad=True) for v in values]
    grad = rng.standard_normal(shapes[0]).astype(np.float32)
    ours_grad, theirs_grad = bai.Tensor(grad), torch.tensor(grad)

    def run_ours():
        bai.grad(ours_fn(*ours), ours, grad_outputs=ours_grad)

    def run_theirs():
        torch.autograd.grad(theirs_fn(*theirs), theirs, grad_outputs=theirs_grad)

    return _ours_against_theirs(f"{case} on {shapes[0]}", run_ours, run_theirs, quick)


def bench_elementwise(quick: bool = False) -> list[dict]:
    """The element-wise layers of the suite's Transformer, forward + backward at its sizes:
    tanh-GELU on the feed-forward activations, softmax on the attention scores, layer norm with
    weight and bias on the residual stream."""
    import torch

    from buildingai.nn import functional as F

    tf = torch.nn.functional
    gelu, scores, stream = (
        ((4, 6), (2, 2, 3, 3), (4, 8)) if quick else ((32, 64, 512), (32, 4, 64, 64), (32, 64, 128))
    )
    features = (stream[-1],)
    cases = [
        ("tanh-GELU", lambda x: F.gelu(x, approximate="tanh"),
         lambda x: tf.gelu(x, approximate="tanh"), [gelu]),
        ("softmax", lambda x: F.softmax(x, -1), lambda x: torch.softmax(x, -1), [scores]),
        ("log_softmax", lambda x: F.log_softmax(x, -1), lambda x: torch.log_softmax(x, -1),
         [scores]),
        ("layer_norm", lambda x, w, b: F.layer_norm(x, features, w, b),
         lambda x, w, b: tf.layer_norm(x, features, w, b), [stream, features, features]),
    ]  # fmt: skip
    return [_elementwise_case(torch, *case, quick) for case in cases] + [
        _cross_entropy_case(torch, (8, 5) if quick else (4096, 1000), quick)
    ]


def _cross_entropy_case(torch, shape, quick):
    """Mean cross-entropy of logits ``shape`` = (N, classes) against class indices, forward +
    backward, ours against PyTorch's."""
    from buildingai.nn import functional as F

    rng = np.random.default_rng(0)
    logits = rng.standard_normal(shape).astype(np.float32)
    target = rng.integers(0, shape[1], shape[0])
    ours, theirs = bai.Tensor(logits, requires_grad=True), torch.tensor(logits, requires_grad=True)
    ours_target, theirs_target = bai.tensor(target), torch.tensor(target)

    def run_ours():
        bai.grad(F.cross_entropy(ours, ours_target), [ours])

    def run_theirs():
        torch.autograd.grad(torch.nn.functional.cross_entropy(theirs, theirs_target), [theirs])

    return _ours_against_theirs(f"cross_entropy on {shape}", run_ours, run_theirs, quick)


def bench_batch_norm(quick: bool = False) -> list[dict]:
    """BatchNorm2d in training (batch statistics, running statistics updated), forward +
    backward of the input, weight and bias, at ResNet-18's first and last stages on 32x32
    images, batch 32."""
    import torch

    shapes = [(4, 3, 5, 5)] if quick else [(32, 64, 32, 32), (32, 512, 4, 4)]
    return [_batch_norm_case(torch, shape, quick) for shape in shapes]


def _batch_norm_case(torch, shape, quick):
    """One BatchNorm2d, ours against PyTorch's, from the same float32 input."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ours_layer, theirs_layer = bai.nn.BatchNorm2d(shape[1]), torch.nn.BatchNorm2d(shape[1])
    ours, theirs = bai.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours_upstream, theirs_upstream = bai.ones_like(ours), torch.ones_like(theirs)

    def run_ours():
        ours_layer(ours).backward(ours_upstream)

    def run_theirs():
        theirs_layer(theirs).backward(theirs_upstream)

    return _ours_against_theirs(f"batch_norm2d on {shape}", run_ours, run_theirs, quick)


def _ours_against_theirs(label: str, run_ours, run_theirs, quick: bool) -> dict:
    """Time the two runs interleaved: the record with the ratio of the medians."""
    timings = measure(
        {"buildingai": run_ours, "pytorch": run_theirs},
        repeats=3 if quick else 7,
        number=1 if quick else 10,
        settle=settle_for(quick),
        clock=_CLOCK["clock"],
    )
    ratio = timings["buildingai"]["median"] / timings["pytorch"]["median"]
    return {"case": label, **timings, "ratio": ratio}


# ----- runner -----------------------------------------------------------------------------------


def run(quick: bool = False, only: list[str] | None = None) -> list[dict]:
    """Every ``bench_*`` function in this module, in definition order, or those named in
    ``only`` (without the prefix: ``["gru", "cells"]``)."""
    records = []
    for name, function in list(globals().items()):
        if not (name.startswith("bench_") and callable(function)):
            continue
        if only is None or name[len("bench_") :] in only:
            records.extend(function(quick))
    return records


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    parser.add_argument("--json", action="store_true", help="also print the records as JSON")
    parser.add_argument(
        "--threads",
        default="1",
        help="BLAS, BuildingAI and PyTorch threads, set alike; a comma-separated list runs "
        "every case at each count (default 1)",
    )
    parser.add_argument(
        "--only",
        help="comma-separated cases to run (conv2d, depthwise, pooling, attention, lstm, gru, rnn, cells, "
        "elementwise, batch_norm); all by default",
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "thread"),
        default="wall",
        help="wall clock (default), or the calling thread's CPU time, which other processes' "
        "load on a shared machine does not change (read it at --threads 1)",
    )
    parser.add_argument(
        "--return-freed-memory",
        action="store_true",
        help="leave glibc malloc at its defaults (freed memory goes back to the OS) instead of "
        "calling buildingai.backend.retain_freed_memory(), as Trainer and the suite do",
    )
    args = parser.parse_args(argv)
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    if not args.return_freed_memory:
        # The process-wide malloc setting Trainer applies; it serves both frameworks alike.
        from buildingai.backend import retain_freed_memory

        retain_freed_memory()
    if args.clock == "thread":
        _CLOCK["clock"] = time.thread_time
    only = args.only.split(",") if args.only else None
    for threads in [int(count) for count in args.threads.split(",") if count.strip()]:
        set_threads(threads)
        bai.set_num_threads(threads)  # BuildingAI's own threads alike, not every core
        records = run(args.quick, only)
        rows = [
            [
                r["case"],
                f"{r['buildingai']['median'] * 1e3:.2f}",
                f"{r['pytorch']['median'] * 1e3:.2f}",
                f"{r['ratio']:.2f}",
            ]
            for r in records
        ]
        caveat = ""
        if args.clock == "thread" and threads > 1:
            caveat = (" (the calling thread's time only: neither framework's work on its other"
                      " threads counts; compare thread counts above one on the wall clock)")  # fmt: skip
        print(f"{threads} thread(s), {args.clock} clock{caveat}")
        print(format_table(["case", "buildingai ms", "pytorch ms", "ours / torch"], rows))
        if args.json:
            environment_record = {**environment(), "threads": threads}
            print(json.dumps({"environment": environment_record, "records": records}, indent=2))


if __name__ == "__main__":
    main()
