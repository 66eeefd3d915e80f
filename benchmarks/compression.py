"""Compression benchmark: int8 quantisation (dynamic, static), pruning and distillation on
MNIST or Fashion-MNIST, in one run.

- Quantisation: accuracy drop (points) and batch-256 inference time of the int8 models against
  the float model, in BuildingAI eager and in onnxruntime (QDQ export, one thread), with PyTorch
  eager (float, and its own dynamic int8 for the MLP) in the same interleaved timing; model
  sizes (ONNX file bytes).
- Pruning: accuracy at 50/80/90% global magnitude sparsity, before and after a short fine-tune.
- Distillation: a small MLP (784-32-10) trained alone and with the CNN as teacher.

Training is short (``--train-size`` images for ``--epochs``) and stated in the output.
Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.compression
[--quick] [--dataset fashion]``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

import buildingai as bai
from buildingai import nn, optim, prune, quant
from buildingai.nn import functional as F
from buildingai.train import MLP, SmallCNN

from .common import accelerate, environment, format_table, measure, set_threads, settle_for

NORMALIZE = (0.1307, 0.3081)


# ----- data and training -------------------------------------------------------------------------
def load_data(dataset: str, train_size: int, quick: bool) -> tuple:
    """``(train_x, train_y, test_x, test_y)``: float32 (N, 1, 28, 28) in [0, 1], int64 (N,)."""
    if quick:  # a learnable stand-in: the class is which 7x7 square is bright
        rng = np.random.default_rng(0)
        labels = rng.integers(0, 10, 600)
        images = rng.uniform(0, 0.3, (600, 1, 28, 28)).astype("float32")
        for index, label in enumerate(labels):
            row, col = divmod(int(label), 4)
            images[index, 0, 7 * row : 7 * row + 7, 7 * col : 7 * col + 7] += 0.7
        return images[:400], labels[:400], images[400:], labels[400:]
    from buildingai.data.datasets import MNIST, FashionMNIST

    source = MNIST if dataset == "mnist" else FashionMNIST
    train, test = source("train"), source("test")

    def arrays(split, count=None):
        images = split.images[:count].astype("float32")[:, None] / 255
        return images, split.labels[:count]

    return (*arrays(train, train_size), *arrays(test))


def batches(x, y, batch_size: int, seed: int):
    order = np.random.default_rng(seed).permutation(len(y))
    for start in range(0, len(y), batch_size):
        index = order[start : start + batch_size]
        yield bai.tensor(x[index]), bai.tensor(y[index])


def train(model, data, epochs: int, lr: float = 2e-3, teacher=None, loss_fn=None, seed=0):
    """Adam over ``epochs`` of ``data`` (train_x, train_y); with a teacher, ``loss_fn(student,
    teacher, labels)``."""
    optimizer = optim.Adam(model.parameters(), lr=lr)
    model.train()
    for epoch in range(epochs):
        for images, labels in batches(data[0], data[1], 128, seed + epoch):
            logits = model(images)
            if teacher is None:
                loss = F.cross_entropy(logits, labels)
            else:
                with bai.no_grad():
                    soft = teacher(images)
                loss = loss_fn(logits, soft, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model.eval()


def accuracy(predict, x, y, batch_size: int = 1000) -> float:
    """Percent correct of ``predict(images) -> logits`` (NumPy in, NumPy out)."""
    correct = 0
    for start in range(0, len(y), batch_size):
        logits = predict(x[start : start + batch_size])
        correct += int((logits.argmax(axis=1) == y[start : start + batch_size]).sum())
    return 100.0 * correct / len(y)


def bai_predict(model):
    def predict(x):
        with bai.no_grad():
            return model(bai.tensor(x)).numpy()

    return predict


# ----- quantisation ------------------------------------------------------------------------------
def _session(onnx_model):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    data = onnx_model.SerializeToString()
    session = onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return (lambda x: session.run(None, {name: x})[0]), len(data)


def _torch_models(model, kind: str):
    """PyTorch eager copies of the float model (and its dynamic int8 form for the MLP)."""
    try:
        import torch
    except ImportError:
        return {}
    if kind == "mlp":
        layers = [torch.nn.Flatten()]
        for layer in model.layers:
            if isinstance(layer, nn.Linear):
                layers.append(torch.nn.Linear(layer.in_features, layer.out_features))
            elif isinstance(layer, nn.ReLU):
                layers.append(torch.nn.ReLU())
    else:
        layers = [
            torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(32 * 49, 64), torch.nn.ReLU(),
            torch.nn.Linear(64, 10),
        ]  # fmt: skip
    torch_model = torch.nn.Sequential(*layers).eval()
    state = {k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()}
    ours = list(state.values())
    for param, value in zip(torch_model.state_dict().values(), ours):
        param.copy_(value)
    mean, std = NORMALIZE

    def run(net):
        def predict(x):
            with torch.no_grad():
                return net((torch.from_numpy(x) - mean) / std).numpy()

        return predict

    models = {"pytorch float": run(torch_model)}
    if kind == "mlp":
        with warnings.catch_warnings():  # torch.ao.quantization announces its move to torchao
            warnings.simplefilter("ignore")
            dynamic = torch.ao.quantization.quantize_dynamic(torch_model, {torch.nn.Linear})
        models["pytorch int8 dynamic"] = run(dynamic)
    return models


def bench_quantization(name: str, model, data, calibration, quick: bool, kind: str) -> dict:
    """Accuracy and batch-256 time of float / dynamic / static int8 in BuildingAI and onnxruntime."""
    from buildingai.export import export_onnx, float_kernels

    _, _, test_x, test_y = data
    dynamic = quant.quantize_dynamic(model)
    prepared = quant.prepare(model, observer=quant.MinMaxObserver, inplace=False)
    with bai.no_grad():
        for start in range(0, len(calibration), 100):
            prepared(bai.tensor(calibration[start : start + 100]))
    static = quant.convert(prepared)
    variants = {"float": model, "int8 dynamic": dynamic, "int8 static": static}

    predictors, sizes, unfused = {}, {}, {}
    signature = [bai.TensorSpec((None, 1, 28, 28))]
    for variant, net in variants.items():
        predictors[f"buildingai {variant}"] = bai_predict(net)
        onnx_model = export_onnx(net, input_signature=signature)
        predictors[f"onnxruntime {variant}"], sizes[variant] = _session(onnx_model)
        unfused[variant] = float_kernels(onnx_model)
    predictors.update(_torch_models(model, kind))

    accuracies = {k: accuracy(f, test_x, test_y) for k, f in predictors.items()}
    batch = test_x[:256]
    timings = measure(
        {k: (lambda f=f: f(batch)) for k, f in predictors.items()},
        repeats=2 if quick else 7,
        number=1 if quick else 10,
        settle=settle_for(quick),
    )
    base = timings["pytorch float"]["median"] if "pytorch float" in timings else None
    return {
        "case": f"{name}: batch 256 inference, 1 thread",
        "accuracy": accuracies,
        "accuracy_drop_points": {
            k: round(accuracies[k.rsplit(" ", 2)[0] + " float"] - v, 2)
            for k, v in accuracies.items()
            if "int8" in k and not k.startswith("pytorch")
        },
        "timings": timings,
        "ratio_to_pytorch_float": {k: v["median"] / base for k, v in timings.items()}
        if base
        else {},
        "onnx_bytes": sizes,
        "onnx_float_kernels": unfused,
    }


# ----- pruning and distillation ------------------------------------------------------------------
def bench_pruning(name: str, make_model, trained, data, steps_epochs: int) -> dict:
    """Global magnitude pruning at 50/80/90% of the weights, fine-tuned ``steps_epochs``."""
    _, _, test_x, test_y = data
    dense = make_model()
    dense.load_state_dict(trained.state_dict())
    train(dense, data, steps_epochs, lr=1e-3, seed=7)  # the fine-tune without pruning
    results = {
        "dense": accuracy(bai_predict(trained), test_x, test_y),
        "dense + same fine-tune": accuracy(bai_predict(dense), test_x, test_y),
    }
    for sparsity in (0.5, 0.8, 0.9):
        model = make_model()
        model.load_state_dict(trained.state_dict())
        layers = [(m, "weight") for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]
        prune.global_unstructured(layers, pruning_method=prune.L1Unstructured, amount=sparsity)
        before = accuracy(bai_predict(model.eval()), test_x, test_y)
        train(model, data, steps_epochs, lr=1e-3, seed=7)
        report = prune.sparsity_report(model)
        results[f"{int(sparsity * 100)}%"] = {
            "before fine-tune": before,
            "after fine-tune": accuracy(bai_predict(model), test_x, test_y),
            "measured sparsity": round(100 * report.sparsity, 2),
        }
    return {"case": f"{name}: global L1 pruning", "accuracy": results}


def bench_distillation(teacher, data, epochs: int) -> dict:
    """The same student (same initial weights, same batches) alone and distilled, at Hinton's
    usual setting (T=4, alpha=0.9) and at T=2, alpha=0.5 (the better of a small sweep here)."""
    _, _, test_x, test_y = data

    def student():
        bai.manual_seed(1)
        return MLP(784, hidden=(32,), out_features=10, normalize=NORMALIZE)

    results = {
        "teacher": accuracy(bai_predict(teacher), test_x, test_y),
        "student alone": accuracy(bai_predict(train(student(), data, epochs)), test_x, test_y),
    }
    for temperature, alpha in ((4.0, 0.9), (2.0, 0.5)):
        loss_fn = nn.DistillationLoss(temperature=temperature, alpha=alpha)
        distilled = train(student(), data, epochs, teacher=teacher, loss_fn=loss_fn)
        results[f"student distilled T={temperature:g} alpha={alpha:g}"] = accuracy(
            bai_predict(distilled), test_x, test_y
        )
    return {
        "case": f"distillation: MLP 784-32-10 student ({epochs} epochs), CNN teacher",
        "accuracy": results,
    }


def run(dataset: str = "mnist", train_size: int = 10000, epochs: int = 1, quick: bool = False):
    data = load_data(dataset, train_size, quick)
    epochs = 1 if quick else epochs

    def make_mlp():
        bai.manual_seed(0)
        return MLP(784, hidden=(256, 128), out_features=10, normalize=NORMALIZE)

    def make_cnn():
        bai.manual_seed(0)
        return SmallCNN(channels=(16, 32), hidden=64, normalize=NORMALIZE)

    records = []
    started = time.perf_counter()
    calibration = data[0][:1000]
    for name, make, kind in (("MLP 784-256-128-10", make_mlp, "mlp"), ("CNN", make_cnn, "cnn")):
        trained = train(make(), data, epochs)
        records.append(bench_quantization(name, trained, data, calibration, quick, kind))
        records.append(bench_pruning(name, make, trained, data, 1))
        if kind == "cnn":
            records.append(bench_distillation(trained, data, 1 if quick else 5))
    return {
        "setup": f"{dataset if not quick else 'synthetic'}: {len(data[1])} training images x "
        f"{epochs} epoch(s) (Adam 2e-3, batch 128); {len(data[3])} test images; pruning "
        "fine-tune 1 epoch at lr 1e-3",
        "seconds": time.perf_counter() - started,
        "records": records,
    }


def _print(result: dict) -> None:
    print(result["setup"])
    for record in result["records"]:
        print(f"\n{record['case']}")
        if "timings" in record:
            rows = [
                [
                    k,
                    f"{record['accuracy'][k]:.2f}",
                    f"{record['timings'][k]['median'] * 1e3:.2f}",
                    f"{record['ratio_to_pytorch_float'].get(k, float('nan')):.2f}",
                ]
                for k in record["timings"]
            ]
            print(format_table(["model", "accuracy %", "median ms", "time / pytorch float"], rows))
            print("accuracy drop (points):", json.dumps(record["accuracy_drop_points"]))
            print("ONNX bytes:", json.dumps(record["onnx_bytes"]))
            print("float kernels left in onnxruntime:", json.dumps(record["onnx_float_kernels"]))
        else:
            print(json.dumps(record["accuracy"], indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--dataset", choices=("mnist", "fashion"), default="mnist")
    parser.add_argument("--train-size", type=int, default=10000)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    set_threads(args.threads)
    result = run(args.dataset, args.train_size, args.epochs, args.quick)
    result["environment"] = environment()
    print(json.dumps(result, indent=1, default=float) if args.json else "")
    if not args.json:
        _print(result)
        print("\nBLAS:", environment()["blas"])


if __name__ == "__main__":
    main()
