"""Cases of the contractions (matmul, linear, einsum, convolutions) and pooling."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import buildingai as bai
import buildingai.nn.functional as F

from .base import (
    NO_ONNX_MAPPING,
    NOT_DIFFERENTIABLE,
    TF,
    Draw,
    Sample,
    backward_of,
    case,
    torch,
)

# ----- linear algebra -----------------------------------------------------------------------------


def _matmul(d: Draw) -> Sample:
    m, k, p = d.size(1, 4), d.size(1, 4), d.size(1, 4)
    layout = d.variant(("batched", "vector_left", "vector_right", "transposed", "broadcast"))
    transpose_a = transpose_b = False
    if layout == "batched":
        k = d.choice((k, "m"))  # the contracted size, symbolic or not
        a, b = d.floats("n", m, k), d.floats("n", k, p)
    elif layout == "vector_left":
        a, b = d.floats(k), d.floats("n", k, p)
    elif layout == "vector_right":
        a, b = d.floats("n", m, k), d.floats(k)
    elif layout == "broadcast":
        a, b = d.floats("n", 1, m, k), d.floats(3, k, p)
    else:
        transpose_a, transpose_b = True, d.choice((False, True))
        a = d.floats("n", k, m)
        b = d.floats("n", p, k) if transpose_b else d.floats("n", k, p)
    if transpose_a or transpose_b:
        return d.call("matmul", a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    return d.capture("matmul", lambda: a @ b)


def _torch_matmul(a, b, *, transpose_a=False, transpose_b=False):
    return torch.matmul(a.mT if transpose_a else a, b.mT if transpose_b else b)


case(
    "matmul", _matmul, torch=_torch_matmul, gradgrad=True, covered_by=("tests/ops/test_linalg.py",)
)


def _linear(d: Draw) -> Sample:
    features, out = d.size(1, 4), d.size(1, 4)
    features = d.choice((features, "m"))  # the contracted size, symbolic or not
    x = d.floats("n", *d.sizes(0, 1), features)
    weight = d.floats(out, features)
    bias = d.choice((None, d.floats(out)))
    return d.capture("linear", lambda: F.linear(x, weight, bias))


case(
    "linear",
    _linear,
    torch=lambda x, w, b=None: TF.linear(x, w, b),
    gradgrad=True,
)


def _linear_relu(d: Draw) -> Sample:
    features, out = d.size(1, 4), d.size(1, 4)
    features = d.choice((features, "m"))
    x = d.floats("n", *d.sizes(0, 1), features)
    weight = d.floats(out, features)
    bias = d.choice((None, d.floats(out)))
    return d.call("linear_relu", x, weight, *([] if bias is None else [bias]))


case(
    "linear_relu",
    _linear_relu,
    torch=lambda x, w, b=None: TF.relu(TF.linear(x, w, b)),
    gradgrad=True,
    covered_by=("tests/graph/test_layer_activation.py",),
)


def _einsum(d: Draw) -> Sample:
    i, j, k = d.size(1, 3), d.size(1, 3), d.size(1, 3)
    equation = d.variant(("bij,bjk->bik", "bij,bkj->bki", "bi,bj->bij"))
    if equation == "bi,bj->bij":
        a, b = d.floats("n", i), d.floats("n", j)
    elif equation == "bij,bjk->bik":
        a, b = d.floats("n", i, j), d.floats("n", j, k)
    else:
        a, b = d.floats("n", i, j), d.floats("n", k, j)
    return d.capture("einsum", lambda: bai.einsum(equation, a, b))


case(
    "einsum",
    _einsum,
    torch=lambda *arrays, equation: torch.einsum(equation, *arrays),
    gradgrad=True,
)


# ----- convolution and pooling --------------------------------------------------------------------


def _conv_geometry(d: Draw) -> dict:
    groups = d.choice((1, 2))
    return dict(
        groups=groups,
        channels=groups * d.size(1, 2),
        out_channels=groups * d.size(1, 2),
        kernel=(d.size(1, 3), d.size(1, 2)),
        stride=(d.size(1, 2), d.size(1, 2)),
        padding=(d.size(0, 1), d.size(0, 1)),
        dilation=(d.size(1, 2), 1),
        size=(d.size(5, 7), d.size(4, 6)),
    )


def _conv_inputs(d: Draw, grad: bool = False) -> tuple:
    g = _conv_geometry(d)
    x = d.floats("n", g["channels"], *g["size"], grad=grad)
    weight = d.floats(g["out_channels"], g["channels"] // g["groups"], *g["kernel"], grad=grad)
    attrs = {k: g[k] for k in ("stride", "padding", "dilation", "groups")}
    return x, weight, attrs


def _conv2d(d: Draw) -> Sample:
    x, weight, attrs = _conv_inputs(d)
    bias = d.choice((None, d.floats(weight.shape[0])))
    return d.capture("conv2d", lambda: F.conv2d(x, weight, bias, **attrs))


case(
    "conv2d",
    _conv2d,
    torch=lambda x, w, b=None, **attrs: TF.conv2d(x, w, b, **attrs),
    gradgrad=True,
    covered_by=("tests/ops/test_conv.py",),
)


def _conv2d_relu(d: Draw) -> Sample:
    x, weight, attrs = _conv_inputs(d)
    bias = d.choice((None, d.floats(weight.shape[0])))
    return d.call("conv2d_relu", x, weight, *([] if bias is None else [bias]), **attrs)


case(
    "conv2d_relu",
    _conv2d_relu,
    torch=lambda x, w, b=None, **attrs: TF.relu(TF.conv2d(x, w, b, **attrs)),
    covered_by=("tests/graph/test_layer_activation.py",),
)


def _conv2d_input_grad(d: Draw) -> Sample:
    x, weight, attrs = _conv_inputs(d, grad=True)
    x.requires_grad = True
    return d.capture(
        "conv2d_input_grad",
        lambda: backward_of(lambda a, w: F.conv2d(a, w, **attrs), x, weight),
        symbols={(0, 0): "n"},
    )


def _torch_conv2d_input_grad(grad, weight, *, input_size, groups, **attrs):
    size = (grad.shape[0], weight.shape[1] * groups) + tuple(input_size)
    return torch.nn.grad.conv2d_input(size, weight, grad, groups=groups, **attrs)


case(
    "conv2d_input_grad",
    _conv2d_input_grad,
    torch=_torch_conv2d_input_grad,
)


def _conv2d_weight_grad(d: Draw) -> Sample:
    x, weight, attrs = _conv_inputs(d, grad=True)
    out_shape = F.conv2d(x, weight, **attrs).shape
    grad = d.tensor(d.rng.standard_normal(out_shape).astype(x.dtype), {0: "n"})
    return d.call("conv2d_weight_grad", x, grad, weight_size=tuple(weight.shape[2:]), **attrs)


def _torch_conv2d_weight_grad(x, grad, columns=None, *, weight_size, groups, **attrs):
    size = (grad.shape[1], x.shape[1] // groups) + tuple(weight_size)
    return torch.nn.grad.conv2d_weight(x, size, grad, groups=groups, **attrs)


case(
    "conv2d_weight_grad",
    _conv2d_weight_grad,
    torch=_torch_conv2d_weight_grad,
    onnx=NO_ONNX_MAPPING,
)


def _pool_geometry(d: Draw) -> dict:
    kernel = (d.size(1, 3), d.size(2, 3))
    return dict(
        kernel_size=kernel,
        stride=(d.size(1, 2), d.size(1, 3)),
        padding=(d.size(0, kernel[0] // 2), d.size(0, kernel[1] // 2)),
        dilation=(d.size(1, 2), 1),
    )


def _max_pool2d(d: Draw) -> Sample:
    x = d.floats("n", d.size(1, 3), d.size(5, 7), d.size(5, 7))
    geometry = _pool_geometry(d)
    ceil_mode = d.choice((False, True))
    return d.capture("max_pool2d", lambda: F.max_pool2d(x, ceil_mode=ceil_mode, **geometry))


case(
    "max_pool2d",
    _max_pool2d,
    torch=lambda x, *, kernel, **attrs: TF.max_pool2d(x, kernel, **attrs),
    gradgrad=True,
)


def _max_pool2d_grads(name: str) -> Callable:
    def make(d: Draw) -> Sample:
        x = d.floats("n", d.size(1, 3), d.size(5, 7), d.size(5, 7), grad=True)
        geometry = _pool_geometry(d)
        return d.capture(
            name,
            lambda: backward_of(lambda t: F.max_pool2d(t, **geometry), x, create_graph=True),
            symbols={(0, 0): "n", (1, 0): "n"},
        )

    return make


def _max_pool2d_choice(d: Draw) -> Sample:
    x = d.floats("n", d.size(1, 3), d.size(5, 7), d.size(5, 7), grad=True)
    geometry = _pool_geometry(d)
    return d.capture(
        "max_pool2d_choice",
        lambda: backward_of(lambda t: F.max_pool2d(t, **geometry), x),
        symbols={(0, 0): "n", (1, 0): "n"},
    )


# its values: through max_pool2d's first derivatives against PyTorch
case(
    "max_pool2d_choice",
    _max_pool2d_choice,
    no_grad=NOT_DIFFERENTIABLE,
    onnx=NO_ONNX_MAPPING,
)


# the window choice (an int array input) is fixed: both ops are linear in their float input
case(
    "max_pool2d_scatter",
    _max_pool2d_grads("max_pool2d_scatter"),
    gradcheck=True,
    grad_inputs=(0,),
    onnx=NO_ONNX_MAPPING,
)
case(
    "max_pool2d_gather",
    _max_pool2d_grads("max_pool2d_gather"),
    gradcheck=True,
    grad_inputs=(0,),
    onnx=NO_ONNX_MAPPING,
)


# ----- unfold and fold ----------------------------------------------------------------------------


def _window_geometry(d: Draw) -> dict:
    kernel = (d.size(1, 3), d.size(2, 3))
    return dict(
        kernel_size=kernel,
        dilation=(d.size(1, 2), 1),
        padding=(d.size(0, 2), d.size(0, 1)),
        stride=(d.size(1, 2), d.size(1, 3)),
    )


def _torch_windows(function: Callable) -> Callable:
    """PyTorch's F.unfold or F.fold called with the record's attributes."""

    def reference(x, *, kernel, **attrs):
        return function(x, kernel_size=kernel, **attrs)

    return reference


def _unfold(d: Draw) -> Sample:
    x = d.floats("n", d.size(1, 3), d.size(5, 7), d.size(5, 7))
    return d.capture("unfold", lambda: F.unfold(x, **_window_geometry(d)))


def _fold(d: Draw) -> Sample:
    geometry = _window_geometry(d)
    size = (d.size(5, 7), d.size(5, 7))
    image = np.zeros((1, 1) + size)
    blocks = F.unfold(bai.tensor(image), **geometry).shape[2]
    taps = geometry["kernel_size"][0] * geometry["kernel_size"][1]
    columns = d.floats("n", d.size(1, 3) * taps, blocks)
    return d.capture("fold", lambda: F.fold(columns, size, **geometry))


# each is the other's gradient: derivatives of every order against PyTorch's
case("unfold", _unfold, torch=_torch_windows(TF.unfold), gradgrad=True)
case("fold", _fold, torch=_torch_windows(TF.fold), gradgrad=True, onnx_opset=18)  # Col2Im


# ----- singular values ----------------------------------------------------------------------------


def _svdvals(d: Draw) -> Sample:
    rows, columns = d.size(1, 4), d.size(1, 4)
    return d.call("svdvals", d.floats("n", rows, columns))


case(
    "svdvals",
    _svdvals,
    dtypes=(np.float32, np.float64),
    torch=torch.linalg.svdvals,
    gradgrad=True,
    onnx="ONNX has no singular value decomposition",
    covered_by=("tests/functions/test_matrix_norms.py",),
)


def _svdvals_backward(d: Draw) -> Sample:
    x = d.floats("n", d.size(1, 4), d.size(1, 4), grad=True)
    return d.capture(
        "svdvals_backward", lambda: backward_of(bai.linalg.svdvals, x), symbols={(0, 0): "n"}
    )


def _torch_svdvals_backward(x, grad):
    u, _, vh = torch.linalg.svd(x, full_matrices=False)  # u_i and v_i flip signs together
    return (u * grad.unsqueeze(-2)) @ vh


case(
    "svdvals_backward",
    _svdvals_backward,
    dtypes=(np.float32, np.float64),
    torch=_torch_svdvals_backward,
    onnx=NO_ONNX_MAPPING,
)


def _svd_project(d: Draw) -> Sample:
    x = d.floats("n", d.size(1, 4), d.size(1, 4), grad=True)
    return d.capture(
        "svd_project",
        lambda: backward_of(bai.linalg.svdvals, x, create_graph=True),
        symbols={(0, 0): "n", (1, 0): "n"},
    )


def _torch_svd_project(x, direction):
    u, _, vh = torch.linalg.svd(x, full_matrices=False)
    return (u * (direction @ vh.mT)).sum(-2)


case(
    "svd_project",
    _svd_project,
    dtypes=(np.float32, np.float64),
    torch=_torch_svd_project,
    onnx=NO_ONNX_MAPPING,
)


def _svdvals_hessian(d: Draw) -> Sample:
    x = d.floats("n", d.size(1, 4), d.size(1, 4), grad=True)
    return d.capture(
        "svdvals_hessian",
        lambda: backward_of(bai.linalg.svdvals, x, create_graph=True),
        symbols={(0, 0): "n", (1, 0): "n", (2, 0): "n"},
    )


def _torch_svdvals_hessian(x, weights, direction):
    """The gradient in x of <direction, U diag(weights) V^T>, through PyTorch's SVD rule."""
    with torch.enable_grad():
        x = x.detach().requires_grad_()
        u, _, vh = torch.linalg.svd(x, full_matrices=False)
        (grad,) = torch.autograd.grad((direction * ((u * weights.unsqueeze(-2)) @ vh)).sum(), x)
    return grad


case(
    "svdvals_hessian",
    _svdvals_hessian,
    dtypes=(np.float32, np.float64),
    torch=_torch_svdvals_hessian,
    no_grad="third derivatives of singular values are not provided: its backward raises",
    onnx=NO_ONNX_MAPPING,
)
