"""``freeze``: a Module (in eval mode) or a function traced into a runnable ``StaticGraph``, or,
with ``train=True``, a training step compiled (``buildingai.compile``).

The tracing itself is ``trace.py``; running the graph is ``executor.py``.
"""

from __future__ import annotations

from ..backend.random import get_rng_state, set_rng_state
from ..nn.functional import cross_entropy
from .compile import compile_step
from .executor import StaticGraph
from .graph import GraphError
from .trace import check_signature, trace_call


def freeze(
    model_or_function,
    input_signature: list,
    optimize: bool = False,
    train: bool = False,
    *,
    loss=None,
    optimizer=None,
):
    """Trace one call of a Module (in eval mode) or a function into a ``StaticGraph``.

    ``input_signature``: one ``TensorSpec`` per positional input. Parameters and buffers of a
    Module become constants named by their state-dict keys; other tensors the call reads become
    constants too. ``optimize=True`` runs the graph passes (constant folding, common
    subexpressions, dead code, element-wise fusion, buffer reuse).

    Lazily sized layers (``DenseClassifier`` without ``in_features``) are built from the
    signature, as the first batch would build them (then the call is traced again with their
    parameters); freezing leaves the random generators where they were.

    Returns a ``StaticGraph``: call it like the model (``static(x)``); ``static.graph`` is the
    ``Graph``.

    ``train=True`` freezes a training step instead (see ``buildingai.compile``): for a Module,
    the signature's last entry is the target, ``optimizer`` updates the model's parameters and
    ``loss(outputs, targets)`` (default: cross-entropy) is minimised; ``static(x, y)`` runs one
    step and returns the loss. A function with ``train=True`` is a step function, compiled as
    it is.
    """
    if train:
        return _freeze_training_step(model_or_function, input_signature, optimize, loss, optimizer)
    specs = check_signature(input_signature, "freeze")
    model = None
    if hasattr(model_or_function, "named_parameters") and hasattr(model_or_function, "training"):
        model = model_or_function
        _refuse_training_mode(model, "")
    parameter_names = _parameter_names(model) if model is not None else {}
    random_state = get_rng_state()
    try:
        try:
            tracer, failure = trace_call(model_or_function, specs, parameter_names), None
        except GraphError as error:
            tracer, failure = None, error
        if model is not None and len(_parameter_names(model)) != len(parameter_names):
            # the call built lazily sized layers (and traced their initialisation): trace again,
            # with their parameters, from the same random state
            _refuse_training_mode(model, " after building its layers lazily during the call")
            set_rng_state(random_state)
            tracer = trace_call(model_or_function, specs, _parameter_names(model))
        elif failure is not None:
            raise failure
    finally:
        set_rng_state(random_state)  # freezing draws no random numbers the user can notice
    static = StaticGraph(tracer.graph)
    if optimize:
        static = static.optimized()
    return static


def _freeze_training_step(model_or_function, input_signature, optimize, loss, optimizer):
    """``freeze(..., train=True)``: the training step of a Module (or a step function) as a
    ``CompiledStep``."""
    if not hasattr(model_or_function, "named_parameters"):
        return compile_step(model_or_function, input_signature, optimize=True)
    if optimizer is None:
        raise GraphError(
            "[freeze] train=True on a Module needs the optimizer that updates it",
            help="freeze(model, [x_spec, y_spec], train=True, optimizer=optimizer)",
        )
    if len(input_signature) < 2:
        raise GraphError(
            f"[freeze] train=True takes the model's inputs and then the target in "
            f"input_signature; got {len(input_signature)} entry",
            help="e.g. [TensorSpec((None, 784)), TensorSpec((None,), 'int64')]",
        )
    model = model_or_function
    if loss is None:
        loss = cross_entropy

    def step(*batch):
        optimizer.zero_grad()
        value = loss(model(*batch[:-1]), batch[-1])
        value.backward()
        optimizer.step()
        return value

    step.__name__ = f"{type(model).__name__}_train_step"
    return compile_step(step, input_signature, optimize=True)


def _parameter_names(model) -> dict:
    names = {}
    for name, tensor in list(model.named_parameters()) + list(model.named_buffers()):
        names[id(tensor)] = name
    return names


def _refuse_training_mode(model, when: str) -> None:
    for module_name, module in model.named_modules():
        if module.training:
            fix = "call model.eval() before freezing"
            if when:
                fix = "run one batch through the model first, then call model.eval() and freeze"
            raise GraphError(
                f"[freeze] module '{module_name or type(model).__name__}' is in training "
                f"mode{when}: dropout masks and batch statistics would be frozen into the graph",
                help=fix,
            )
