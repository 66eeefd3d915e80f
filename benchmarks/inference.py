"""Inference benchmark: a frozen graph (plain and optimised) against eager BuildingAI,
``bai.compile(model)`` (as ``torch.compile(model)``), PyTorch eager and onnxruntime (one
thread) on an MLP and a small CNN, same run, interleaved timing (the PyTorch and onnxruntime
columns appear when those packages are installed and the graph exports); plus the speed-up of
``parallel()`` / concurrent frozen branches on two independent matmul-heavy branches with one
BLAS thread each.

Run: ``python -m benchmarks.inference [--quick] [--threads N] [--only mlp,cnn,parallel]``.
"""

from __future__ import annotations

import argparse

import numpy as np

import buildingai as bai
from buildingai import nn
from buildingai.graph import TensorSpec, freeze

from .common import accelerate, format_table, measure, save_run, set_threads, settle_for


def _mlp(sizes):
    layers = []
    for index, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(fan_in, fan_out))
        if index < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers).eval()


def _torch_copy(model, torch):
    """The same MLP in PyTorch, with our weights."""
    layers = []
    for layer in model:
        if isinstance(layer, nn.Linear):
            linear = torch.nn.Linear(layer.in_features, layer.out_features)
            with torch.no_grad():
                linear.weight.copy_(torch.from_numpy(layer.weight.numpy()))
                linear.bias.copy_(torch.from_numpy(layer.bias.numpy()))
            layers.append(linear)
        else:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).eval()


def bench_mlp(quick: bool = False) -> list[dict]:
    """MLP 784-256-256-10 at batch 1 and 256 (in quick mode: 32-16-16-4, batch 1 and 8)."""
    sizes = (32, 16, 16, 4) if quick else (784, 256, 256, 10)
    batches = (1, 8) if quick else (1, 256)
    model = _mlp(sizes)
    static = freeze(model, [TensorSpec((None, sizes[0]))])
    optimized = static.optimized()
    try:
        import torch

        torch_model = _torch_copy(model, torch)
    except ImportError:
        torch = torch_model = None
    session = _onnx_session(static)
    records = []
    for batch in batches:
        x = np.random.default_rng(batch).standard_normal((batch, sizes[0])).astype("float32")
        candidates = _candidates(model, static, optimized, torch, torch_model, session, x)
        number = 20 if quick else (2000 if batch == 1 else 200)
        timings = measure(
            candidates, repeats=3 if quick else 7, number=number, settle=settle_for(quick)
        )
        base = timings["frozen"]["median"]
        records.append(
            {
                "case": f"MLP {'-'.join(map(str, sizes))} batch {batch}",
                "timings": timings,
                "ratios_to_frozen": {k: v["median"] / base for k, v in timings.items()},
            }
        )
    return records


class _CNN(nn.Module):
    """conv(3->16) + batch norm + relu + 2x2 average pool, conv(16->32) + relu + pool, linear."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.pool = nn.AvgPool2d(2)
        self.fc = nn.Linear(32 * (size // 4) ** 2, 10)

    def forward(self, x):  # (N, 3, S, S) -> (N, 10)
        x = self.pool(self.bn(self.conv1(x)).relu())
        x = self.pool(self.conv2(x).relu())
        return self.fc(x.reshape(x.shape[0], -1))


def _torch_cnn(model, torch):
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = torch.nn.Conv2d(3, 16, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(16)
            self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
            self.pool = torch.nn.AvgPool2d(2)
            self.fc = torch.nn.Linear(model.fc.in_features, 10)

        def forward(self, x):
            x = self.pool(torch.relu(self.bn(self.conv1(x))))
            x = self.pool(torch.relu(self.conv2(x)))
            return self.fc(x.reshape(x.shape[0], -1))

    net = Net().eval()
    state = {k: torch.from_numpy(np.array(v.numpy())) for k, v in model.state_dict().items()}
    net.load_state_dict(state, strict=False)
    return net


def bench_cnn(quick: bool = False) -> list[dict]:
    """A small CNN on 32x32 images at batch 1 and 64 (quick: 8x8, batch 1 and 4)."""
    size = 8 if quick else 32
    model = _CNN(size).eval()
    static = freeze(model, [TensorSpec((None, 3, size, size))])
    optimized = static.optimized()
    try:
        import torch

        torch_model = _torch_cnn(model, torch)
    except ImportError:
        torch = torch_model = None
    session = _onnx_session(static)
    records = []
    for batch in (1, 4) if quick else (1, 64):
        x = np.random.default_rng(batch).standard_normal((batch, 3, size, size)).astype("float32")
        candidates = _candidates(model, static, optimized, torch, torch_model, session, x)
        number = 5 if quick else (200 if batch == 1 else 10)
        timings = measure(
            candidates, repeats=3 if quick else 7, number=number, settle=settle_for(quick)
        )
        base = timings["frozen"]["median"]
        records.append(
            {
                "case": f"CNN {size}x{size} batch {batch}",
                "timings": timings,
                "ratios_to_frozen": {k: v["median"] / base for k, v in timings.items()},
            }
        )
    return records


def _candidates(model, static, optimized, torch, torch_model, session, x) -> dict:
    tensor = bai.tensor(x)
    candidates = {"frozen": lambda: static(x), "frozen+passes": lambda: optimized(x)}

    def eager():
        with bai.no_grad():
            model(tensor)

    candidates["eager"] = eager
    compiled = bai.compile(model)  # torch.compile(model): a frozen graph per input shape

    def compiled_model():
        with bai.no_grad():
            compiled(tensor)

    candidates["compile(model)"] = compiled_model
    if torch is not None:
        torch_x = torch.from_numpy(x)

        def torch_eager():
            with torch.no_grad():
                torch_model(torch_x)

        candidates["pytorch"] = torch_eager
    if session is not None:
        name = session.get_inputs()[0].name
        candidates["onnxruntime"] = lambda: session.run(None, {name: x})
    return candidates


def _onnx_session(static):
    try:
        import onnxruntime

        from buildingai.export import check_onnx, export_onnx
    except ImportError:
        return None
    if check_onnx(static):
        return None  # an op without a mapping: nothing to compare
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    data = export_onnx(static).SerializeToString()
    return onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def bench_parallel(quick: bool = False) -> list[dict]:
    """Two independent branches of matmul + tanh, one BLAS thread each: sequential against
    concurrent (a frozen graph with two workers, and ``parallel()`` where dispatch can defer)."""
    from threadpoolctl import threadpool_limits

    import buildingai.nn.functional as F
    from buildingai.autograd import dispatch
    from buildingai.graph import parallel

    size, depth = (64, 2) if quick else (512, 6)
    rng = np.random.default_rng(0)
    a0 = (rng.standard_normal((size, size)) / np.sqrt(size)).astype("float32")
    b0 = (rng.standard_normal((size, size)) / np.sqrt(size)).astype("float32")

    def branches(a, b):
        # linear (x @ w.T): its public function reads no values, so parallel() can defer it
        left, right = a, b
        for _ in range(depth):
            left = F.linear(left, a).tanh()
            right = F.linear(right, b).tanh()
        return left, right

    static = freeze(branches, [TensorSpec((size, size)), TensorSpec((size, size))])
    concurrent = static.with_workers(2)
    a, b = bai.tensor(a0), bai.tensor(b0)

    def sequential():
        with bai.no_grad():
            branches(a, b)

    candidates = {
        "eager sequential": sequential,
        "frozen sequential": lambda: static(a0, b0),
        "frozen 2 workers": lambda: concurrent(a0, b0),
    }
    if hasattr(dispatch, "set_deferral"):

        def deferred():
            with bai.no_grad(), parallel(workers=2):
                branches(a, b)

        candidates["eager parallel()"] = deferred
    with threadpool_limits(limits=1, user_api="blas"):
        timings = measure(
            candidates, repeats=3 if quick else 7, number=3 if quick else 20,
            settle=settle_for(quick),
        )  # fmt: skip
    base = timings["eager sequential"]["median"]
    return [
        {
            "case": f"two branches of {depth} x (linear {size}x{size} + tanh), 1 BLAS thread",
            "timings": timings,
            "ratios_to_frozen": {k: v["median"] / base for k, v in timings.items()},
        }
    ]


def _print(records: list[dict]) -> None:
    for record in records:
        rows = [
            [name, f"{t['median'] * 1e6:.1f}", f"{record['ratios_to_frozen'][name]:.2f}"]
            for name, t in record["timings"].items()
        ]
        print(f"\n{record['case']}")
        print(format_table(["implementation", "median us", "ratio"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", help="also write the records to this file")
    parser.add_argument(
        "--threads", type=int, default=None, help="BLAS and PyTorch threads, set alike"
    )
    parser.add_argument(
        "--only", default="mlp,cnn,parallel", help="comma-separated parts: mlp, cnn, parallel"
    )
    arguments = parser.parse_args()
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    set_threads(arguments.threads)
    parts = {"mlp": bench_mlp, "cnn": bench_cnn, "parallel": bench_parallel}
    records = []
    for name in arguments.only.split(","):
        records += parts[name.strip()](arguments.quick)
    save_run(records, arguments.json)
    _print(records)


if __name__ == "__main__":
    main()
