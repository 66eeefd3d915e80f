"""CUDA sources read as NumPy: the CUDA twins' expressions and statements evaluated element-wise
on float32 arrays, so their arithmetic is checked against the NumPy reference kernels on a
machine without a GPU."""

from __future__ import annotations

import re

import numpy as np

from tests.helpers import torch

_FUNCTIONS = (("expf", "np.exp"), ("erff", "_erf"), ("sqrtf", "np.sqrt"), ("logf", "np.log"))


def parameters(declaration: str) -> list[str]:
    """ "float32 x, float32 out" -> ["x", "out"]."""
    return [part.split()[-1] for part in declaration.split(",")]


def numpy_expression(code: str) -> str:
    """A CUDA expression in NumPy terms: float literals, expf, erff, sqrtf, logf."""
    code = re.sub(r"(\d+\.\d+(?:e-?\d+)?)f\b", r"np.float32(\1)", code)
    for cuda_name, numpy_name in _FUNCTIONS:
        code = code.replace(cuda_name + "(", numpy_name + "(")
    return code


def _erf(x):
    return torch.special.erf(torch.from_numpy(np.asarray(x, np.float32))).numpy()


def value_of(expression: str, values: dict):
    """One CUDA expression evaluated on the NumPy arrays and scalars in ``values``."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        result = eval(numpy_expression(expression), {"np": np, "_erf": _erf}, values)  # noqa: S307
    return np.asarray(result, np.float32)


def evaluate(operation: str, values: dict) -> None:
    """Run a sequence of ``name = expression;`` / ``float name = expression;`` statements on
    NumPy arrays, element-wise as the kernel would."""
    for statement in filter(None, (part.strip() for part in operation.split(";"))):
        statement = re.sub(
            r"^if \((.+)\) (\w+) \+= (.+)$", r"\2 = np.where(\1, \2 + (\3), \2)", statement
        )
        statement = re.sub(r"(\w+) \? (-?\w+) : (\w+)", r"np.where(\1, \2, \3)", statement)
        target, expression = statement.split(" = ", 1)
        values[target.split()[-1]] = value_of(expression, values)
