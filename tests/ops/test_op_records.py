"""The op table's completeness test (in the spirit of PyTorch's OpInfo): every record of
``buildingai.ops.all_ops()`` has a case in ``tests/ops/op_cases/``, and every case checks

- values and first derivatives against PyTorch in float64 (second derivatives for a subset), or
  the gradient with finite differences, or says why not;
- a one-op graph exported to ONNX against eager, or says why not;
- ``infer`` against ``forward`` (shape, dtype, device) on several seeded random draws, and on
  symbolic sizes (``DimExpr`` evaluated at the concrete sizes);
- ``cost``: a triple of non-negative sizes, the same on symbolic sizes once evaluated, and
  2 * multiply-adds FLOPs for contractions.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import buildingai as bai
from buildingai.ops.abstract import DimExpr, SizeSum, SymbolicSizeError, ValueSpec, spec_of
from buildingai.ops.base import Op

from ..helpers import check_op, constant
from .op_cases import CASES, NOT_DIFFERENTIABLE, OPS, Draw, OpCase

SEEDS = tuple(range(8))  # draws per op; makers cycle through their forms (Draw.variant)
EXPORT_SEEDS = SEEDS[:5]  # exports are slower: the first five forms
RECORDS = sorted(set(OPS) & set(CASES))
ROOT = Path(__file__).resolve().parents[2]


def _draw(name: str, seed: int, dtype=None, mixed: bool = False):
    case = CASES[name]
    # a seed per op, so that ops of one family do not all see the same shapes
    rng = np.random.default_rng([seed, sum(map(ord, name))])
    return case.make(Draw(rng, case.dtypes[0] if dtype is None else dtype, mixed, index=seed))


def _tensors(sample, grad_positions=()) -> list:
    return [
        bai.Tensor(v.copy(), requires_grad=i in grad_positions) if isinstance(v, np.ndarray) else v
        for i, v in enumerate(sample.inputs)
    ]


def _forward_spec(op, sample):
    """The ValueSpec(s) of what the op's forward returns on ``sample``."""
    with bai.no_grad(), np.errstate(all="ignore"):
        out = op(*_tensors(sample), **sample.attrs)
    if isinstance(out, (tuple, list)):
        return tuple(spec_of(o) for o in out)
    return spec_of(out)


def _specs(sample) -> list:
    return [spec_of(v) for v in sample.inputs]


def _show_call(sample, specs=None) -> str:
    specs = _specs(sample) if specs is None else specs
    attrs = {
        k: f"array{tuple(v.shape)}" if isinstance(v, np.ndarray) else v
        for k, v in sample.attrs.items()
    }
    return f"inputs {specs}, attrs {attrs}"


def _same_spec(inferred, produced) -> bool:
    if isinstance(produced, tuple):
        return (
            isinstance(inferred, tuple)
            and len(inferred) == len(produced)
            and all(_same_spec(i, p) for i, p in zip(inferred, produced))
        )
    return (
        isinstance(inferred, ValueSpec)
        # Python ints or DimExprs: a NumPy integer would turn DimExpr arithmetic into arrays
        and all(type(d) is int or isinstance(d, DimExpr) for d in inferred.shape)
        and tuple(inferred.shape) == tuple(produced.shape)
        and np.dtype(inferred.dtype) == produced.dtype
        and str(inferred.device) == str(produced.device)
    )


def _infer(op, specs, attrs):
    try:
        return op.infer(*specs, **attrs)
    except NotImplementedError as error:
        pytest.fail(f"[{op.name}] has no infer: {error}")


def _grad_positions(op, case, sample) -> tuple:
    if case.no_grad is not None or not op.differentiable:
        return ()
    floats = [
        i for i, v in enumerate(sample.inputs) if isinstance(v, np.ndarray) and v.dtype.kind == "f"
    ]
    if case.grad_inputs is not None:
        return tuple(i for i in floats if i in case.grad_inputs)
    return tuple(floats)


# ----- completeness -------------------------------------------------------------------------------


def test_every_record_has_a_case():
    missing = sorted(set(OPS) - set(CASES))
    assert not missing, f"op records without a case in tests/ops/op_cases/: {missing}"


def test_every_case_names_a_record():
    stale = sorted(set(CASES) - set(OPS))
    assert not stale, f"cases in tests/ops/op_cases/ for ops all_ops() does not list: {stale}"


def test_every_case_checks_the_gradient_or_says_why():
    problems = []
    for name in RECORDS:
        op, case = OPS[name], CASES[name]
        checked = case.torch is not None or case.gradcheck
        if case.no_grad is not None:
            if not case.no_grad.strip():
                problems.append(f"{name}: an empty reason for not checking the gradient")
            if case.no_grad == NOT_DIFFERENTIABLE and op.differentiable:
                problems.append(f"{name}: said to be non-differentiable, but the record is")
            through = re.match(r"tested through (\w+)'s", case.no_grad)
            if through and not (
                CASES.get(through[1]) and CASES[through[1]].gradgrad and CASES[through[1]].torch
            ):
                problems.append(f"{name}: {through[1]}'s case checks no second derivatives")
        elif not op.differentiable:
            problems.append(f"{name}: not differentiable; say so with no_grad=NOT_DIFFERENTIABLE")
        elif not checked:
            problems.append(f"{name}: no torch reference, no gradcheck and no reason")
        if case.gradgrad and case.torch is None and not case.gradcheck:
            problems.append(f"{name}: gradgrad needs a torch reference or gradcheck")
    assert not problems, "\n".join(problems)


def test_every_case_exports_to_onnx_or_says_why():
    problems = []
    for name in RECORDS:
        mapped = callable(getattr(OPS[name], "to_onnx", None))
        reason = CASES[name].onnx
        if reason is True and not mapped:
            problems.append(f"{name}: the case exports it, but the record has no to_onnx")
        elif reason is not True and mapped:
            problems.append(f"{name}: the record has a to_onnx; export it in its case")
        elif reason is not True and not (isinstance(reason, str) and reason.strip()):
            problems.append(f"{name}: onnx must be True or a reason, got {reason!r}")
    assert not problems, "\n".join(problems)


def test_sweeps_named_by_cases_exist_and_mention_their_op():
    problems = []
    for name, case in sorted(CASES.items()):
        for path in case.covered_by:
            file = ROOT / path
            if not file.is_file():
                problems.append(f"{name}: {path} does not exist")
            elif name not in file.read_text():
                problems.append(f"{name}: {path} never mentions '{name}'")
    assert not problems, "\n".join(problems)


# ----- values and derivatives ---------------------------------------------------------------------


@pytest.fixture(params=[False, True], ids=["reference", "accelerated"])
def acceleration(request):
    """Every record runs with buildingai.accel off (its own forward) and on (its registered
    kernels, where they apply)."""
    with bai.accel.enabled(request.param):
        yield request.param


@pytest.mark.parametrize("name", RECORDS)
def test_values_and_gradients_against_reference(name, acceleration):
    case = CASES[name]
    dtype = np.float64 if np.float64 in case.dtypes else case.dtypes[0]
    for seed in SEEDS:
        _check_against_reference(OPS[name], case, _draw(name, seed, dtype), seed)


ACCELERATED = sorted({entry.op.name for entry in bai.accel.registered() if entry.op is not None})


@pytest.mark.parametrize("name", [name for name in ACCELERATED if name in CASES])
def test_registered_kernels_agree_with_the_record_in_float32(name):
    """Kernels apply mostly to float32: there, values and first derivatives with acceleration on
    equal the record's own to float32 round-off."""
    case = CASES[name]
    dtype = np.float32 if np.float32 in case.dtypes else case.dtypes[0]
    op = OPS[name]
    for seed in SEEDS[:4]:
        sample = _draw(name, seed, dtype)
        grads = _grad_positions(op, case, sample) if case.no_grad is None else []
        results = []
        for on in (False, True):
            with bai.accel.enabled(on), np.errstate(all="ignore"):
                inputs = _tensors(sample, grads)
                out = op(*inputs, **sample.attrs)
                outputs = list(out) if isinstance(out, (tuple, list)) else [out]
                values = [o.numpy() for o in outputs if isinstance(o, bai.Tensor)]
                floating = [o for o in outputs if isinstance(o, bai.Tensor) and o.requires_grad]
                if floating:
                    seed_grads = [bai.ones(*o.shape, dtype=o.dtype) for o in floating]
                    bai.backward(floating, seed_grads)
                    values += [inputs[i].grad.numpy() for i in grads if inputs[i].grad is not None]
                results.append(values)
        reference, accelerated = results
        assert len(reference) == len(accelerated), f"[{name}] seed {seed}"
        for left, right in zip(reference, accelerated):
            tolerance = 1e-4 if left.dtype == np.float32 else 1e-10
            np.testing.assert_allclose(
                right, left, rtol=tolerance, atol=tolerance, err_msg=f"[{name}] seed {seed}"
            )


def _check_against_reference(op, case, sample, seed: int) -> None:
    """Values and derivatives of one sample: against PyTorch where the case has a reference
    (float64), by finite differences where it asks for them."""
    grads = _grad_positions(op, case, sample)
    if op.differentiable and case.no_grad is None:
        assert grads, f"[{op.name}] differentiable, but the sample has no input to differentiate"
    attrs = sample.attrs

    def function(*inputs):
        return op(*inputs, **attrs)

    if case.torch is not None:
        specs = [
            constant(v, requires_grad=i in grads) if isinstance(v, np.ndarray) else v
            for i, v in enumerate(sample.inputs)
        ]
        check_op(
            function,
            *specs,
            torch_fn=lambda *inputs: case.torch(*inputs, **attrs),
            atol=case.atol,
            rtol=case.rtol,
            grad=bool(grads),
            gradcheck=case.gradcheck,
            gradgrad=case.gradgrad and seed == 0,
            seed=seed,
        )
    elif case.gradcheck:
        assert grads, f"[{op.name}] gradcheck asked for, but no input needs a gradient"
        inputs = _tensors(sample, grads)
        bai.debug.gradcheck(function, inputs)
        if case.gradgrad and seed == 0:
            bai.debug.gradgradcheck(function, inputs)


# ----- ONNX ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in RECORDS if CASES[n].onnx is True])
def test_one_op_graph_exports_to_onnx_and_matches_eager(name):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from buildingai.export import export_onnx, run_onnxruntime
    from buildingai.graph import TensorSpec, freeze

    op, case = OPS[name], CASES[name]
    dtype = np.float32 if np.float32 in case.dtypes else case.dtypes[0]
    for seed in EXPORT_SEEDS:
        sample = _draw(name, seed, dtype)
        positions = [i for i, v in enumerate(sample.inputs) if isinstance(v, np.ndarray)]
        arrays = [sample.inputs[i] for i in positions]

        def function(*graph_inputs, sample=sample, positions=positions):
            values = list(sample.inputs)
            for position, tensor in zip(positions, graph_inputs):
                if position in case.onnx_domain:  # the identity on the sample's values
                    tensor = tensor.clamp(*case.onnx_domain[position])
                values[position] = tensor
            return op(*values, **sample.attrs)

        static = freeze(function, [TensorSpec(a.shape, a.dtype) for a in arrays])
        traced = [node.op.name for node in static.graph.nodes]
        assert name in traced, f"[{name}] the frozen graph holds {traced}, not the op"
        model = export_onnx(static, opset=case.onnx_opset)
        with np.errstate(all="ignore"):
            eager = function(*[bai.Tensor(a) for a in arrays]).numpy()
        exported = run_onnxruntime(model, *arrays)[0]
        where = f"[{name}] {_show_call(sample)}"
        assert exported.dtype == eager.dtype, f"{where}: onnx {exported.dtype} != {eager.dtype}"
        assert exported.shape == eager.shape, f"{where}: onnx {exported.shape} != {eager.shape}"
        tolerance = 1e-5 if eager.dtype.kind == "f" else 0
        np.testing.assert_allclose(exported, eager, rtol=tolerance, atol=tolerance, err_msg=where)


# ----- abstract evaluation ------------------------------------------------------------------------


@pytest.mark.parametrize("name", RECORDS)
def test_infer_agrees_with_forward(name):
    op, case = OPS[name], CASES[name]
    mismatches = []
    for seed in SEEDS:
        for dtype in case.dtypes:
            try:  # the sample maker runs the op (or its forward op) too
                sample = _draw(name, seed, dtype, mixed=seed > 0)
                produced = _forward_spec(op, sample)
            except Exception as error:  # reported with the other draws' mismatches
                mismatches.append(f"draw {seed} in {np.dtype(dtype)}: forward raised {error!r}")
                continue
            inferred = _infer(op, _specs(sample), sample.attrs)
            if not _same_spec(inferred, produced):
                mismatches.append(
                    f"{_show_call(sample)}: infer gave {inferred}, forward gave {produced}"
                )
    assert not mismatches, f"[{name}] infer disagrees with forward:\n" + "\n".join(mismatches)


def _symbolic(sample):
    """The input specs with the sample's symbolic axes as DimExprs, and each symbol's size."""
    sizes, specs = dict(sample.symbol_sizes), []
    for position, value in enumerate(sample.inputs):
        spec = spec_of(value)
        if not isinstance(spec, ValueSpec):
            specs.append(spec)
            continue
        shape = list(spec.shape)
        for (where, axis), symbol in sample.symbols.items():
            if where == position:
                assert sizes.setdefault(symbol, shape[axis]) == shape[axis], (
                    f"symbol {symbol} stands for sizes {sizes[symbol]} and {shape[axis]}"
                )
                shape[axis] = DimExpr((symbol,))
        specs.append(spec.with_shape(shape))
    symbols = {symbol: DimExpr((symbol,)) for symbol in sizes}
    attrs = sample.symbolic_attrs(symbols) if sample.symbolic_attrs else sample.attrs
    return specs, attrs, sizes


def _evaluate(value, sizes):
    if isinstance(value, (DimExpr, SizeSum)):
        return value.evaluate(sizes)
    if isinstance(value, ValueSpec):
        return value.with_shape(tuple(_evaluate(d, sizes) for d in value.shape))
    if isinstance(value, tuple):
        return tuple(_evaluate(v, sizes) for v in value)
    return value


@pytest.mark.parametrize("name", RECORDS)
def test_infer_on_symbolic_sizes(name):
    op = OPS[name]
    mismatches = []
    for seed in SEEDS:
        sample = _draw(name, seed)
        symbolic = sample.symbols or sample.symbol_sizes
        assert symbolic, f"[{name}] the sample maker names no symbolic size"
        specs, attrs, sizes = _symbolic(sample)
        if sample.symbolic_error is not None:
            with pytest.raises(SymbolicSizeError):
                op.infer(*specs, **attrs)
            continue
        inferred = _infer(op, specs, attrs)
        produced = _forward_spec(op, sample)
        if not _same_spec(_evaluate(inferred, sizes), produced):
            mismatches.append(
                f"{_show_call(sample, specs)} at {sizes}: infer gave {inferred}, "
                f"forward gave {produced}"
            )
        concrete_cost = op.cost(*_specs(sample), **sample.attrs)
        symbolic_cost = op.cost(*specs, **attrs)
        counts = (int, np.integer, DimExpr, SizeSum)  # SizeSum: 4*m + 4*m*n, bytes of (n, m), (m,)
        bad = [c for c in symbolic_cost if not isinstance(c, counts)]
        assert not bad, f"[{name}] cost on symbolic sizes gave {symbolic_cost}"
        if tuple(_evaluate(c, sizes) for c in symbolic_cost) != tuple(concrete_cost):
            mismatches.append(
                f"{_show_call(sample, specs)}: symbolic cost {symbolic_cost} at {sizes} "
                f"!= concrete cost {concrete_cost}"
            )
    assert not mismatches, f"[{name}] symbolic infer/cost disagree:\n" + "\n".join(mismatches)


@pytest.mark.parametrize("name", RECORDS)
def test_cost_is_a_triple_of_non_negative_ints(name):
    op = OPS[name]
    for seed in SEEDS:
        sample = _draw(name, seed)
        cost = op.cost(*_specs(sample), **sample.attrs)
        where = f"[{name}] cost on {_show_call(sample)} gave {cost!r}"
        assert isinstance(cost, tuple) and len(cost) == 3, where
        for count in cost:
            assert isinstance(count, (int, np.integer)) and not isinstance(count, bool), where
            assert count >= 0, where


# ----- FLOPs of contractions: 2 per multiply-add --------------------------------------------------


def _matmul_madds(sample) -> int:
    a, b = (np.empty(v.shape) for v in sample.inputs[:2])
    if sample.attrs.get("transpose_a"):
        a = np.swapaxes(a, -1, -2)
    if sample.attrs.get("transpose_b"):
        b = np.swapaxes(b, -1, -2)
    a = a[None, :] if a.ndim == 1 else a
    b = b[:, None] if b.ndim == 1 else b
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return int(np.prod(batch, dtype=np.int64)) * a.shape[-2] * a.shape[-1] * b.shape[-1]


def _linear_madds(sample) -> int:
    x, weight = sample.inputs[:2]
    return int(np.prod(x.shape[:-1], dtype=np.int64)) * weight.shape[0] * weight.shape[1]


def _conv_madds(sample) -> int:
    """conv2d and conv3d: each output element is a product over a filter (C / groups, *k)."""
    x, weight = sample.inputs[:2]
    with bai.no_grad():
        op = OPS["conv2d" if weight.ndim == 4 else "conv3d"]
        produced = op(bai.Tensor(x), bai.Tensor(weight), **sample.attrs)
    return produced.array.size * int(np.prod(weight.shape[1:]))


def _conv_input_grad_madds(sample) -> int:
    grad, weight = sample.inputs[:2]
    return grad.size * int(np.prod(weight.shape[1:]))


def _conv_weight_grad_madds(sample) -> int:
    x, grad = sample.inputs[:2]
    kernel = int(np.prod(sample.attrs["weight_size"]))
    return grad.size * (x.shape[1] // sample.attrs["groups"]) * kernel


def _einsum_madds(sample) -> int:
    left = sample.attrs["equation"].split("->")[0]
    sizes = {}
    for operand, value in zip(left.split(","), sample.inputs):
        sizes.update(zip(operand, value.shape))
    return int(np.prod(list(sizes.values()), dtype=np.int64))


CONTRACTIONS = {
    "matmul": _matmul_madds,
    "linear": _linear_madds,
    "conv2d": _conv_madds,
    "conv3d": _conv_madds,
    "einsum": _einsum_madds,
    "conv2d_input_grad": _conv_input_grad_madds,
    "conv2d_weight_grad": _conv_weight_grad_madds,
    "conv3d_input_grad": _conv_input_grad_madds,
    "conv3d_weight_grad": _conv_weight_grad_madds,
}


@pytest.mark.parametrize("name", sorted(CONTRACTIONS))
def test_contraction_flops_are_two_per_multiply_add(name):
    op = OPS[name]
    for seed in SEEDS:
        sample = _draw(name, seed)
        flops = op.cost(*_specs(sample), **sample.attrs)[0]
        expected = 2 * CONTRACTIONS[name](sample)
        has_bias = name in ("linear", "conv2d", "conv3d") and len(sample.inputs) > 2
        if has_bias and sample.inputs[2] is not None:
            output = _forward_spec(op, sample)
            allowed = {expected, expected + int(np.prod(output.shape))}  # one add per output
        else:
            allowed = {expected}
        assert flops in allowed, (
            f"[{name}] {_show_call(sample)}: cost gives {flops} FLOPs, expected "
            f"{' or '.join(map(str, sorted(allowed)))} (2 per multiply-add)"
        )


# ----- the checks above fail when they should -----------------------------------------------------


class _Doubling(Op):
    """``2 * x``, with a correct infer; the tests below break one hook at a time."""

    name = "doubling_for_tests"

    def forward(self, ctx, xp, x):
        return x * 2

    def backward(self, ctx, grad):
        return (grad * 2,)

    def infer(self, x):
        return x


@pytest.fixture
def doubling(monkeypatch):
    """A record and its case, registered for the duration of one test."""
    op = _Doubling()

    def make(d: Draw):
        return d.call(op.name, d.floats("n", "m"))

    monkeypatch.setitem(OPS, op.name, op)
    monkeypatch.setitem(CASES, op.name, OpCase(make, torch=lambda x: x * 2, onnx="no mapping"))
    return op


def test_the_sound_record_passes_every_check(doubling):
    test_values_and_gradients_against_reference(doubling.name, acceleration=False)
    test_infer_agrees_with_forward(doubling.name)
    test_infer_on_symbolic_sizes(doubling.name)
    test_cost_is_a_triple_of_non_negative_ints(doubling.name)


def test_a_record_without_a_case_fails_completeness(doubling, monkeypatch):
    monkeypatch.delitem(CASES, doubling.name)
    with pytest.raises(AssertionError, match="doubling_for_tests"):
        test_every_record_has_a_case()


def test_a_wrong_dtype_from_infer_fails(doubling, monkeypatch):
    monkeypatch.setattr(_Doubling, "infer", lambda self, x: x.with_dtype(np.float16))
    with pytest.raises(AssertionError, match="infer disagrees with forward"):
        test_infer_agrees_with_forward(doubling.name)


def test_an_infer_that_loses_a_symbol_fails(doubling, monkeypatch):
    def concrete_infer(self, x):  # a symbolic size replaced by a guess
        return x.with_shape(tuple(3 if isinstance(d, DimExpr) else d for d in x.shape))

    monkeypatch.setattr(_Doubling, "infer", concrete_infer)
    with pytest.raises(AssertionError, match="symbolic infer/cost disagree"):
        test_infer_on_symbolic_sizes(doubling.name)


def test_a_cost_that_is_not_three_sizes_fails(doubling, monkeypatch):
    monkeypatch.setattr(_Doubling, "cost", lambda self, x: (1.5, 0, 0))
    with pytest.raises(AssertionError, match="cost on"):
        test_cost_is_a_triple_of_non_negative_ints(doubling.name)


def test_a_wrong_gradient_fails_against_torch(doubling, monkeypatch):
    monkeypatch.setattr(_Doubling, "backward", lambda self, ctx, grad: (grad * 3,))
    with pytest.raises(AssertionError, match="gradient of input 0"):
        test_values_and_gradients_against_reference(doubling.name, acceleration=False)


def test_contraction_flops_other_than_two_per_multiply_add_fail(monkeypatch):
    matmul = type(OPS["matmul"])
    monkeypatch.setattr(matmul, "cost", lambda self, a, b, **attrs: (1, 0, 0))
    with pytest.raises(AssertionError, match="2 per multiply-add"):
        test_contraction_flops_are_two_per_multiply_add("matmul")
