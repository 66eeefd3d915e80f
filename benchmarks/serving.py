"""Serving benchmark: throughput and p50/p99 latency of ``buildingai serve`` at 1, 8 and 64
concurrent clients, with batching on (``--max-batch 64``) and off (``--max-batch 1``), for the
MNIST MLP (784-256-256-10) and CNN (``SmallCNN``), in the same run:

- ``buildingai``: the checkpoint served as ``buildingai serve`` serves it (eager, no_grad);
- ``pytorch``: the same weights in a PyTorch eager module behind the same server;
- ``onnxruntime``: the model's ONNX export behind the same server;
- ``no model``: a model that returns zeros at once: the HTTP and batching floor.

Each server runs in its own process with one BLAS/OpenMP thread; the clients (asyncio + httpx,
one sample of 784 pixels per JSON request, closed loop) run in this process. Ratios are
throughput over the PyTorch-backed server's at the same setting.

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.serving [--quick]
[--seconds 1] [--rounds 3] [--json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from .common import accelerate, environment, format_table

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ("buildingai", "pytorch", "onnxruntime", "no model")
MODELS = {
    "MLP": dict(type="MLP"),
    "CNN": dict(type="SmallCNN"),
}
QUICK_MODELS = {"MLP": dict(type="MLP", hidden=[16])}


# ----- the models, written once and served by a child process --------------------------------
def write_models(folder: Path, models: dict) -> dict:
    """Per model: a checkpoint as `buildingai train` writes it, and its ONNX export."""
    from buildingai import TensorSpec, export_onnx
    from buildingai.train import Trainer

    paths = {}
    for name, spec in models.items():
        config = dict(model=spec, progress=False, retain_freed_memory=False,
                      data=dict(train=dict(type="MNIST", split="train")))  # fmt: skip
        trainer = Trainer.from_config(config)
        checkpoint = folder / f"{name}.safetensors"
        trainer.save_checkpoint(checkpoint)
        shape = (None, 784) if spec["type"] == "MLP" else (None, 1, 28, 28)
        onnx_path = folder / f"{name}.onnx"
        export_onnx(trainer.model.eval(), onnx_path, input_signature=[TensorSpec(shape)])
        paths[name] = {"checkpoint": checkpoint, "onnx": onnx_path}
    return paths


def _torch_model(served):
    """The checkpoint's MLP or SmallCNN as a PyTorch module with the same state-dict keys."""
    import torch

    model = served.model
    torch.set_num_threads(1)
    if hasattr(model, "layers"):  # MLP: Flatten, (Linear, ReLU)*, Linear
        net = torch.nn.Module()
        layers = [torch.nn.Flatten()]
        for layer in list(model.layers)[1:]:
            if hasattr(layer, "in_features"):
                layers.append(torch.nn.Linear(layer.in_features, layer.out_features))
            else:
                layers.append(torch.nn.ReLU())
        net.layers = torch.nn.Sequential(*layers)
        net.forward = lambda x: net.layers(x)
    else:  # SmallCNN: (Conv 3x3, ReLU, MaxPool 2)*, Flatten, Linear, ReLU, Linear
        net = torch.nn.Module()
        blocks = []
        for layer in model.features:
            if hasattr(layer, "in_channels"):
                blocks.append(torch.nn.Conv2d(layer.in_channels, layer.out_channels, 3, padding=1))
            elif type(layer).__name__ == "ReLU":
                blocks.append(torch.nn.ReLU())
            else:
                blocks.append(torch.nn.MaxPool2d(2))
        head = [torch.nn.Flatten()]
        for layer in list(model.classifier)[1:]:
            if hasattr(layer, "in_features"):
                head.append(torch.nn.Linear(layer.in_features, layer.out_features))
            else:
                head.append(torch.nn.ReLU())
        net.features, net.classifier = torch.nn.Sequential(*blocks), torch.nn.Sequential(*head)
        net.forward = lambda x: net.classifier(net.features(x))
    state = {key: torch.from_numpy(np.array(value.numpy())) for key, value in
             model.state_dict().items()}  # fmt: skip
    net.load_state_dict(state)
    return net.eval()


def _served_model(backend: str, paths: dict):
    from buildingai.serve import ServedModel, load_model

    if backend == "onnxruntime":
        import onnxruntime

        served = load_model(paths["onnx"])
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1  # as BLAS and PyTorch
        served.session = onnxruntime.InferenceSession(str(paths["onnx"]), options,
                                                      providers=["CPUExecutionProvider"])  # fmt: skip
        return served
    served = load_model(paths["checkpoint"])
    if backend == "buildingai":
        return served
    if backend == "no model":

        class Zeros(ServedModel):
            def run(self, batch: np.ndarray) -> np.ndarray:
                return np.zeros((len(batch), 10), np.float32)

        model = Zeros("zeros", served.signature, None)
    else:
        import torch

        net = _torch_model(served)

        class Torch(ServedModel):
            kind = "pytorch"

            def run(self, batch: np.ndarray) -> np.ndarray:
                with torch.inference_mode():
                    return net(torch.from_numpy(batch)).numpy()

        model = Torch("pytorch", served.signature, None)
        sample = np.random.default_rng(0).random((3, *served.signature.shape), np.float32)
        np.testing.assert_allclose(model.run(sample), served.run(sample), rtol=1e-4, atol=1e-5)
    model.warm_up()
    return model


def child(backend: str, checkpoint: str, onnx_path: str, max_batch: int, latency: float) -> None:
    """Serve one backend on a free port; the URL goes to stderr as ``url <url>``."""
    from buildingai.serve import create_app, serve

    model = _served_model(backend, {"checkpoint": checkpoint, "onnx": onnx_path})
    app = create_app(model, max_batch=max_batch, max_latency_ms=latency)
    serve(app, port=0, on_ready=lambda url: print("url", url, file=sys.stderr, flush=True))


class ChildServer:
    """A server child process, stopped on exit."""

    def __init__(self, backend: str, paths: dict, max_batch: int, latency: float) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1",
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # fmt: skip
        command = [sys.executable, "-m", "benchmarks.serving", "--child", backend,
                   str(paths["checkpoint"]), str(paths["onnx"]), str(max_batch), str(latency)]  # fmt: skip
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env,
                                        cwd=ROOT)  # fmt: skip
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self.process.stderr.readline()))
        reader.start()
        reader.join(120)
        if not line or not line[0].startswith("url "):
            self.stop()
            raise RuntimeError(f"the {backend} server did not start: {line}")
        self.url = line[0].split()[1]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.process.stderr.close()


# ----- the clients ---------------------------------------------------------------------------
def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads) so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _load(server, clients: int, seconds: float, warmup: float, bodies: list) -> dict:
    """One round: ``clients`` closed-loop clients for ``warmup + seconds``; the latencies of the
    requests sent and answered inside the measured ``seconds``, and the server's counters."""
    import httpx

    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    # no Nagle delay between the request's header and body writes (40 ms with delayed ACKs)
    transport = httpx.AsyncHTTPTransport(
        limits=limits, socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
    )
    headers = {"Content-Type": "application/json"}
    url = server.url
    async with httpx.AsyncClient(base_url=url, transport=transport, timeout=60) as session:
        start = time.perf_counter()
        measure_from, stop_at = start + warmup, start + warmup + seconds

        async def client(index: int) -> None:
            nonlocal errors
            k = index
            while True:
                sent = time.perf_counter()
                if sent >= stop_at:
                    return
                answer = await session.post("/predict", content=bodies[k % len(bodies)],
                                            headers=headers)  # fmt: skip
                done = time.perf_counter()
                k += clients
                if answer.status_code != 200:
                    errors += 1
                elif sent >= measure_from and done <= stop_at:
                    latencies.append(done - sent)

        before, cpu = (await session.get("/health")).json(), _cpu_seconds(server.process.pid)
        await asyncio.gather(*(client(k) for k in range(clients)))
        cpu = _cpu_seconds(server.process.pid) - cpu
        after = (await session.get("/health")).json()
    return {
        "server_cpu_s": cpu,
        "latencies": latencies,
        "requests_per_s": len(latencies) / seconds,
        "errors": errors,
        "requests": after["requests"] - before["requests"],
        "batches": after["batches"] - before["batches"],
    }


def _summary(rounds: list[dict]) -> dict:
    latencies = [value for one in rounds for value in one["latencies"]]
    return {
        "requests_per_s": statistics.median(one["requests_per_s"] for one in rounds),
        "p50_ms": 1000 * statistics.median(latencies) if latencies else float("nan"),
        "p99_ms": 1000 * float(np.percentile(latencies, 99)) if latencies else float("nan"),
        "mean_batch": sum(one["requests"] for one in rounds)
        / max(1, sum(one["batches"] for one in rounds)),
        # CPU the server spent per request answered: what a busy shared machine disturbs least
        "server_cpu_ms_per_request": 1000
        * sum(one["server_cpu_s"] for one in rounds)
        / max(1, sum(one["requests"] for one in rounds)),
        "errors": sum(one["errors"] for one in rounds),
        "rounds": len(rounds),
    }


def _image_bodies(bodies: list) -> list:
    """The same samples as (1, 28, 28) images."""
    return [
        json.dumps(
            {"inputs": np.array(json.loads(body)["inputs"]).reshape(1, 1, 28, 28).tolist()}
        ).encode()
        for body in bodies
    ]


def bench(quick: bool = False, seconds: float = 1.0, rounds: int = 3, log=print) -> list[dict]:
    """Every setting measured in ``rounds`` rounds of ``seconds``, the backends interleaved
    round by round (all their servers up at once), so a busy moment of a shared machine hits
    them alike; throughput is the median round, latencies pool all rounds."""
    models = QUICK_MODELS if quick else MODELS
    concurrency = (1, 4) if quick else (1, 8, 64)
    backends = ("buildingai",) if quick else BACKENDS
    seconds, warmup, rounds = (0.3, 0.1, 1) if quick else (seconds, 0.3, rounds)
    rng = np.random.default_rng(0)
    bodies = [json.dumps({"inputs": rng.random((1, 784)).round(4).tolist()}).encode()
              for _ in range(64)]  # fmt: skip
    records = []
    with tempfile.TemporaryDirectory() as folder:
        paths = write_models(Path(folder), models)
        for name in models:
            model_bodies = _image_bodies(bodies) if models[name]["type"] == "SmallCNN" else bodies
            for batching, max_batch, latency in (("on", 64, 2.0), ("off", 1, 0.0)):
                servers = {}
                try:
                    for backend in backends:
                        servers[backend] = ChildServer(backend, paths[name], max_batch, latency)
                    for clients in concurrency:
                        measured: dict = {backend: [] for backend in backends}
                        for _ in range(rounds):
                            for backend, server in servers.items():
                                measured[backend].append(asyncio.run(
                                    _load(server, clients, seconds, warmup, model_bodies)))  # fmt: skip
                        for backend in backends:
                            result = _summary(measured[backend])
                            records.append({"model": name, "backend": backend,
                                            "batching": batching, "clients": clients, **result})  # fmt: skip
                            log(f"{name} {backend:<12} batching {batching:<3} {clients:>2} "
                                f"clients: {result['requests_per_s']:7.0f} req/s, p50 "
                                f"{result['p50_ms']:6.2f} ms, p99 {result['p99_ms']:6.2f} ms, "
                                f"mean batch {result['mean_batch']:.1f}, server CPU "
                                f"{result['server_cpu_ms_per_request']:.2f} ms/request")  # fmt: skip
                finally:
                    for server in servers.values():
                        server.stop()
    return records


def table(records: list[dict]) -> str:
    reference = {(r["model"], r["batching"], r["clients"]): r["requests_per_s"]
                 for r in records if r["backend"] == "pytorch"}  # fmt: skip
    rows = []
    for r in records:
        base = reference.get((r["model"], r["batching"], r["clients"]))
        ratio = f"{r['requests_per_s'] / base:.2f}" if base else "-"
        rows.append([r["model"], r["backend"], r["batching"], r["clients"],
                     f"{r['requests_per_s']:.0f}", f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}",
                     f"{r['mean_batch']:.1f}", f"{r['server_cpu_ms_per_request']:.2f}", ratio,
                     r["errors"]])  # fmt: skip
    headers = ["model", "backend", "batching", "clients", "req/s", "p50 ms", "p99 ms",
               "mean batch", "server CPU ms/req", "req/s ÷ pytorch", "errors"]  # fmt: skip
    return format_table(headers, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny model, short runs")
    parser.add_argument("--seconds", type=float, default=1.0, help="measured time per round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per setting")
    parser.add_argument("--json", action="store_true", help="print the records as JSON")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    if args.child:
        backend, checkpoint, onnx_path, max_batch, latency = args.child
        child(backend, checkpoint, onnx_path, int(max_batch), float(latency))
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop the servers on the way out
    records = bench(
        args.quick, args.seconds, args.rounds, log=lambda line: print(line, file=sys.stderr)
    )
    # the clients and the servers share this machine's cores with whatever else runs on it
    machine = {**environment(), "load_average_1_5_15_min": os.getloadavg()}
    if args.json:
        print(json.dumps({"environment": machine, "records": records}, indent=1))
        return
    print(json.dumps(machine, indent=1))
    print(table(records))


if __name__ == "__main__":
    main()
