"""Every CUDA twin's source compiles, checked without a GPU: NVRTC (the runtime compiler CuPy
itself uses, from the ``nvidia-cuda-nvrtc-cu12`` wheel) compiles each element-wise operation of
``compiled/cuda.py`` and each reduction and map of ``compiled/cuda_rows.py``, wrapped the way
CuPy wraps them: inputs as ``const`` references to the current element, outputs as references,
a reduction's ``reduce_expr`` as the ``REDUCE(a, b)`` macro started from its identity. A typo in
a function name, a write to an input or a missing semicolon fails here instead of on the first
GPU. (What the kernels compute is checked by tests/ops/kernels/test_cuda_twins.py and
test_cuda_rows.py, and on a GPU by tests/gpu.)"""

from __future__ import annotations

import ctypes
import glob
import os

import pytest

from buildingai.accel.kernels.compiled import cuda, cuda_rows

_TYPES = {"float32": "float", "bool": "bool"}


def _nvrtc():
    """libnvrtc from the nvidia wheels, or None."""
    try:
        import nvidia
    except ImportError:
        return None
    for root in nvidia.__path__:
        for path in sorted(glob.glob(os.path.join(root, "**", "libnvrtc.so*"), recursive=True)):
            if "builtins" not in path and ".alt." not in path:
                return ctypes.CDLL(path)
    return None


NVRTC = _nvrtc()
pytestmark = pytest.mark.skipif(NVRTC is None, reason="needs NVRTC (nvidia-cuda-nvrtc-cu12)")


def _compile(source: str, name: str) -> tuple[int, str]:
    """(NVRTC's status, its log) for ``source``, compiled for compute capability 7.0."""
    program = ctypes.c_void_p()
    status = NVRTC.nvrtcCreateProgram(
        ctypes.byref(program), source.encode(), f"{name}.cu".encode(), 0, None, None
    )
    assert status == 0, f"nvrtcCreateProgram: {status}"
    try:
        options = (ctypes.c_char_p * 1)(b"--gpu-architecture=compute_70")
        status = NVRTC.nvrtcCompileProgram(program, 1, options)
        size = ctypes.c_size_t()
        NVRTC.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        NVRTC.nvrtcGetProgramLog(program, log)
        return status, log.value.decode(errors="replace")
    finally:
        NVRTC.nvrtcDestroyProgram(ctypes.byref(program))


def _declared(declaration: str) -> list[tuple[str, str]]:
    """ "float32 x, bool flag" -> [("float", "x"), ("bool", "flag")]."""
    pairs = []
    for part in declaration.split(","):
        dtype, name = part.split()
        pairs.append((_TYPES[dtype], name))
    return pairs


def _elementwise_source(name: str, inputs: str, outputs: str, operation: str) -> str:
    ins, outs = _declared(inputs), _declared(outputs)
    parameters = ", ".join(
        [f"const {ctype}* _raw_{value}" for ctype, value in ins]
        + [f"{ctype}* _raw_{value}" for ctype, value in outs]
        + ["int _size"]
    )
    bindings = "".join(f"    const {ctype}& {value} = _raw_{value}[i];\n" for ctype, value in ins)
    bindings += "".join(f"    {ctype}& {value} = _raw_{value}[i];\n" for ctype, value in outs)
    return (
        f'extern "C" __global__ void {name}({parameters}) {{\n'
        "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < _size;"
        " i += blockDim.x * gridDim.x) {\n"
        f"{bindings}    {operation}\n  }}\n}}\n"
    )


def _reduction_source(name: str, inputs: list[str], step: cuda_rows.Reduce) -> str:
    reduce_expression, identity = cuda_rows._MAX if step.kind == "max" else cuda_rows._SUM
    parameters = ", ".join([f"const float* _raw_{value}" for value in inputs] + ["float* _out"])
    bindings = "".join(f"    const float& {value} = _raw_{value}[i];\n" for value in inputs)
    return (
        f"#define REDUCE(a, b) ({reduce_expression})\n"
        f'extern "C" __global__ void {name}({parameters}, int _size) {{\n'
        f"  float _s = float({identity});\n"
        "  for (int i = threadIdx.x; i < _size; i += blockDim.x) {\n"
        f"{bindings}    float _a = static_cast<float>({step.value});\n"
        "    _s = REDUCE(_s, _a);\n  }\n"
        "  float& y = _out[blockIdx.x];\n  float a = _s;\n  y = a;\n}\n"
    )


def _check(source: str, name: str) -> None:
    status, log = _compile(source, name)
    assert status == 0, f"{name} does not compile:\n{log}\n--- source ---\n{source}"


@pytest.mark.parametrize("name", sorted(cuda.SOURCES))
def test_elementwise_twin_compiles(name):
    inputs, outputs, operation = cuda.SOURCES[name]
    label = "bai_" + name.replace(".", "_")
    _check(_elementwise_source(label, inputs, outputs, operation), label)


@pytest.mark.parametrize("name", sorted(cuda_rows.TWINS))
def test_every_step_of_a_row_plan_compiles(name):
    plan = cuda_rows.TWINS[name]
    for index, (step, inputs) in enumerate(zip(plan.steps, cuda_rows.step_inputs(plan))):
        label = f"bai_{name.replace('.', '_')}_{index}"
        if isinstance(step, cuda_rows.Reduce):
            _check(_reduction_source(label, inputs, step), label)
        else:
            declared = ", ".join(f"float32 {value}" for value in inputs)
            outputs = ", ".join(f"float32 {target}" for target in step.targets)
            _check(_elementwise_source(label, declared, outputs, step.operation), label)


def test_a_broken_source_fails_to_compile():
    source = _elementwise_source("broken", "float32 x", "float32 out", "out = expff(x);")
    status, log = _compile(source, "broken")
    assert status != 0 and "expff" in log
