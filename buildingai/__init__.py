"""BuildingAI: a deep-learning framework on NumPy (CPU) and CuPy (GPU).

Explicit control, no hidden magic: every op runs through one dispatch function, every gradient
rule is readable Python, and the training loop is code you write.
"""

from . import (
    accel,
    backend,
    backends,
    cuda,
    data,
    debug,
    export,
    graph,
    hub,
    linalg,
    nn,
    ops,
    optim,
    prob,
    prune,
    quant,
    vis,
)
from .accel import catalog  # noqa: F401 - registers the faster kernels beside the records
from .autograd import (
    DispatchMode,
    Gradients,
    Tensor,
    active_modes,
    apply,
    backward,
    dispatch_mode,
    enable_grad,
    grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .backend import Device, Generator, cuda_is_available, default_generator, manual_seed
from .backend.determinism import (
    are_deterministic_algorithms_enabled,
    is_deterministic_algorithms_warn_only_enabled,
    use_deterministic_algorithms,
)
from .backend.dtypes import (
    bool_,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    set_default_dtype,
    uint8,
)
from .backend.precision import (
    get_float32_matmul_precision,
    get_math_precision,
    math_precision,
    set_float32_matmul_precision,
    set_math_precision,
)
from .backend.random import get_rng_state, set_rng_state
from .backend.threads import get_num_threads, set_num_threads
from .cuda import amp as _cuda_amp  # noqa: F401 - reachable as buildingai.cuda.amp (torch.cuda.amp)
from .debug import activation_stats, gradient_monitor
from .errors import (
    ArgumentError,
    AutogradError,
    BuildingAIError,
    CheckpointError,
    DeviceError,
    DTypeError,
    GradcheckError,
    IndexingError,
    ShapeError,
)
from .export import export_onnx
from .functions import *
from .graph import CompiledStep, TensorSpec, compile, freeze
from .memory import memory_scope
from .serialization import load, save
from .utils import data as _utils_data  # noqa: F401 - reachable as buildingai.utils.data
from .version import __version__

bool = bool_  # noqa: A001 - the dtype, as in torch.bool
# PyTorch's dtype names beside NumPy's, so model code that says torch.long runs unchanged
long, int, short, half = int64, int32, int16, float16  # noqa: A001
float, double = float32, float64  # noqa: A001
device = Device  # torch.device("cuda" if cuda.is_available() else "cpu")


def __getattr__(name: str):
    if name == "bfloat16":
        from .backend.dtypes import as_dtype

        return as_dtype("bfloat16")
    raise AttributeError(f"module 'buildingai' has no attribute {name!r}")
