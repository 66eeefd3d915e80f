"""Run a model once more on stand-in inputs and record its op graph, leaving no trace.

``plot_computation_graph`` uses it to draw a model's most recent call when that call was not
recorded as it ran: every module called on its own keeps the shapes and dtypes of its call
(``nn/call_signature.py``), and the replay runs the model on stand-in values of those shapes.
It draws the same graph as the real call unless the forward branches on values (routing,
early exits); ``record_runs`` draws the calls themselves.

A replay runs without gradients and puts back what a forward may change: the random streams
(the default generator, NumPy's and Python's global ones, and the generators its modules
hold), its buffers (batch norm's running statistics) and its modules' training flags.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..autograd.dispatch import dispatch_mode
from ..autograd.mode import no_grad
from ..autograd.tensor import Tensor
from ..backend.device import to_device
from ..backend.random import Generator, get_rng_state, set_rng_state
from ..graph.graph import Graph, GraphError
from ..graph.spec import TensorSpec
from ..nn.call_signature import (
    CallSignature,
    NotKept,
    TensorShape,
    last_call_signature,
    set_last_call_signature,
)
from .runs import RunRecorder, _parameter_names

# The size a symbolic dimension of a TensorSpec takes in a replay (one for all: shared names
# then agree); 2 rather than 1, so that no size-1 broadcast hides a mismatch.
STAND_IN_SIZE = 2


def _stand_in_array(shape: tuple, dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """Values of ``shape`` and ``dtype``: normal floats from a private stream, zeros (valid
    indices, empty masks) for integers and booleans."""
    if dtype.kind in "fc":
        return rng.standard_normal(shape).astype(dtype)
    return np.zeros(shape, dtype)


def _stand_in(kept, rng: np.random.Generator, name: str):
    if isinstance(kept, TensorShape):
        array = _stand_in_array(kept.shape, np.dtype(kept.dtype), rng)
        return Tensor(to_device(array, kept.device))
    if isinstance(kept, NotKept):
        raise GraphError(
            f"[plot_computation_graph] {name}'s most recent call took a {kept.type_name}, "
            "which is not kept, so that call cannot be drawn again",
            help="pass example_inputs=(...) to draw one call on them, or call "
            "buildingai.vis.record_runs(model) before running it to draw each call as it runs",
        )
    if isinstance(kept, (tuple, list)):
        return type(kept)(_stand_in(item, rng, name) for item in kept)
    if isinstance(kept, dict):
        return {key: _stand_in(item, rng, name) for key, item in kept.items()}
    return kept


def stand_in_call(signature: CallSignature, name: str) -> tuple[tuple, dict]:
    """``(args, kwargs)`` of stand-in values for a kept call signature."""
    rng = np.random.default_rng(0)  # a private stream: the user's generators are not drawn
    args = tuple(_stand_in(value, rng, name) for value in signature.args)
    kwargs = {key: _stand_in(value, rng, name) for key, value in signature.kwargs.items()}
    return args, kwargs


def stand_in_specs(input_signature: list, module) -> tuple:
    """Stand-in Tensors, on ``module``'s device, for the TensorSpecs of ``input_signature``
    (symbolic sizes become ``STAND_IN_SIZE``); other entries pass as they are."""
    rng = np.random.default_rng(0)
    device = next((p.device for p in module.parameters()), None)
    inputs = []
    for spec in input_signature:
        if isinstance(spec, TensorSpec):
            shape = tuple(e if isinstance(e, int) else STAND_IN_SIZE for e in spec.shape)
            array = _stand_in_array(shape, spec.dtype, rng)
            spec = Tensor(array if device is None else to_device(array, device))
        inputs.append(spec)
    return tuple(inputs)


@contextlib.contextmanager
def leaving_no_trace(module):
    """Put back, on leaving, the random streams, buffers and training flags of ``module``."""
    streams = get_rng_state()
    generators = [
        (value, value.get_state())
        for part in module.modules()
        for value in vars(part).values()
        if isinstance(value, Generator)
    ]
    buffers = [(buffer, buffer.array.copy()) for buffer in module.buffers()]
    flags = [(part, part.training) for part in module.modules()]
    signature = last_call_signature(module)  # a replayed call is not the most recent one
    try:
        yield
    finally:
        set_last_call_signature(module, signature)
        for part, training in flags:
            part.training = training
        for buffer, array in buffers:
            buffer.array[...] = array
        for generator, state in generators:
            generator.set_state(state)
        set_rng_state(streams)


def _record(module, args: tuple, kwargs: dict) -> Graph:
    recorder = RunRecorder(_parameter_names(module))
    recorder.add_inputs(args, kwargs)
    with no_grad(), dispatch_mode(recorder), np.errstate(all="ignore"):
        result = module(*args, **kwargs)
    return recorder.finish(result)


def _attribute_key(value):
    if isinstance(value, Tensor):
        value = value.array
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return ("array", tuple(value.shape), str(value.dtype))
    if isinstance(value, (tuple, list)):
        return tuple(_attribute_key(item) for item in value)
    return repr(value)


def _steps(graph: Graph) -> list:
    """What each node computes: op, module, attributes and output shape."""
    return [
        (
            node.op.name,
            node.module,
            tuple(sorted((key, _attribute_key(v)) for key, v in node.attrs.items())),
            graph.values[node.output].shape,
        )
        for node in graph.nodes
    ]


def where_training_changes(module, args: tuple, kwargs: dict) -> str | None:
    """The module path of the first op that ``module``'s training mode changes in the call
    ``module(*args, **kwargs)`` (dropout, batch statistics...), or None when training and
    evaluation compute the same ops. Both are replayed, leaving no trace."""
    with leaving_no_trace(module):
        training = _steps(_record(module, args, kwargs))
    with leaving_no_trace(module):
        module.eval()
        evaluation = _steps(_record(module, args, kwargs))
    for trained, evaluated in zip(training, evaluation):
        if trained != evaluated:
            return trained[1] or evaluated[1] or type(module).__name__
    if len(training) != len(evaluation):
        longer = training if len(training) > len(evaluation) else evaluation
        return longer[min(len(training), len(evaluation))][1] or type(module).__name__
    return None


def refuse_training_that_changes(module, args: tuple, kwargs: dict, name: str) -> None:
    """Raise a GraphError when ``module`` is in training mode and that mode changes what the
    call computes; a training-mode model without such layers passes."""
    if not any(part.training for part in module.modules()):
        return
    where = where_training_changes(module, args, kwargs)
    if where is not None:
        raise GraphError(
            f"[plot_computation_graph] {name} is in training mode, and training mode changes "
            f"what {where} computes (dropout masks, batch statistics): a drawing would show "
            "one random training call",
            help="call model.eval() first to draw inference; or call "
            "buildingai.vis.record_runs(model) before training to draw each call as it runs",
        )


def replay(module, signature: CallSignature, name: str) -> Graph:
    """The op graph of ``module`` called on stand-in values of a kept ``signature``."""
    args, kwargs = stand_in_call(signature, name)
    refuse_training_that_changes(module, args, kwargs, name)
    with leaving_no_trace(module):
        return _record(module, args, kwargs)
