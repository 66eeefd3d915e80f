"""Fused optimizer updates: the built-in optimizers' textbook rules (``buildingai/optim/``)
rewritten for speed, and the blocked, threaded driver that runs them.

With acceleration on (``buildingai.accel.enable()``), ``OptimizerBase.step`` hands each
parameter group to :func:`update_group`, which

- updates the group's small parameters together, as one flat array (``packing.py``, switch
  ``optim.packed_updates``), for every optimizer that declares ``updates_elementwise``;
- runs each built-in rule in its fused form below (switch ``optim.fused_updates``): the scaled
  sums are one BLAS ``axpby`` pass each (``vector_blas.py``), over cache-sized blocks that a large
  parameter shares among ``set_num_threads`` threads; SGD and Adam on float32 arrays are one
  compiled pass (``kernels/compiled/optim.py``), Adam on CuPy arrays one CUDA kernel.

A fused form takes the place of one class's ``update`` (named in ``FUSED_FORMS``); a subclass that
overrides ``update`` runs its own. Each computes what its textbook rule computes, to rounding
(``tests/optim/test_accelerated.py``), and keeps the same state.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from ..backend import array_namespace
from ..backend.threads import executor, get_num_threads
from . import packing, registry
from .kernels import compiled
from .kernels.compiled import compiled_twin
from .vector_blas import axpby

FUSED_UPDATES = registry.register_switch(
    "optim.fused_updates",
    description="the built-in optimizers' element-wise updates with BLAS axpby passes over "
    "cache-sized blocks, large parameters split among threads, SGD and Adam in one compiled pass",
)
PACKED_UPDATES = packing.PACKED_UPDATES

# Elements per block of the blocked update: cache-resident across passes, few Python calls.
BLOCK_SIZE = 1 << 19
# Up to this many elements a parameter is updated whole: it fits in cache, blocks only add calls.
WHOLE_SIZE = 1 << 18
# From this size a parameter's blocks run on set_num_threads threads (ufuncs release the GIL).
THREADED_MIN_SIZE = 1 << 20


def update_group(optimizer, index: int, group: dict, entries: list) -> bool:
    """Update ``entries`` (``(param, grad, state)`` of parameter group ``index``: Tensors,
    backend arrays fitted to them, their created states) the fast way and return True; return
    False, having done nothing, where no acceleration applies: ``optimizer.update`` then runs
    on each."""
    fused = fused_form(type(optimizer).update) if FUSED_UPDATES.active else None
    packed = (
        PACKED_UPDATES.active
        and optimizer.updates_elementwise
        and len(entries) > 1
        # PyTorch's foreach=False (without fused=True) asks for one-by-one updates
        and (group.get("foreach") is not False or bool(group.get("fused")))
    )
    if fused is None and not packed:
        return False
    kept = optimizer._accelerated  # what the fast path keeps between steps
    if fused is None:
        update = optimizer.update
    else:
        runner = kept.get("runner")
        if runner is None:
            runner = kept["runner"] = BlockedRunner()
        update = functools.partial(fused, runner)
    if packed:
        entries = packing.update_small_together(
            kept.setdefault("packs", {}), index, entries, update, group
        )
    for param, grad, state in entries:
        update(param.array, grad, state, group)
    return True


def fused_form(textbook_update: Callable) -> Callable | None:
    """The fused form that stands in for ``textbook_update`` (a class's ``update`` function),
    or None where it has none."""
    return FUSED_FORMS.get(f"{textbook_update.__module__}.{textbook_update.__qualname__}")


# ----- the blocked, threaded driver ------------------------------------------------------------
class BlockedRunner:
    """Runs an array update ``update_fn(xp, *arrays, work, **scalars)`` over cache-sized blocks,
    with work arrays kept between steps (one runner per optimizer)."""

    def __init__(self) -> None:
        self.workspace: dict[tuple, list] = {}  # (worker, dtype) -> flat work arrays
        self.work_views: dict[tuple, list] = {}  # shaped views of them, see _whole_work

    def run(self, update_fn: Callable, arrays: tuple, work_count: int, **scalars) -> None:
        """Call ``update_fn(xp, *arrays, work, **scalars)`` over cache-sized blocks.

        ``arrays`` (parameter, gradient, state arrays; None entries pass through) all have the
        parameter's shape; ``work`` is a list of ``work_count`` scratch arrays of the block's
        shape. On NumPy, contiguous arrays are cut into blocks of ``BLOCK_SIZE`` elements, so
        one update's many passes stay in cache; a large parameter's blocks are shared among
        threads. A compiled (or CUDA) twin of ``update_fn`` takes the whole arrays in one pass
        where it applies; CuPy arrays and odd memory layouts get one call over the whole arrays.
        """
        param = arrays[0]
        xp = array_namespace(param)
        contiguous = all(a is None or a.flags.c_contiguous for a in arrays)
        if xp is not np and compiled.run_gpu(update_fn, arrays, scalars):  # one fused kernel
            return
        if xp is not np or not contiguous:
            work = [xp.empty_like(param) for _ in range(work_count)]
            update_fn(xp, *arrays, work, **scalars)
            return
        flat = tuple(None if a is None else a.reshape(-1) for a in arrays)
        if compiled.run(update_fn, flat, scalars):  # one pass on numba's threads
            return
        size = param.size
        if size <= WHOLE_SIZE:
            # One block: the whole arrays, in their own shape, with work arrays of that shape
            # cached as views of the workspace (no per-call slicing or reshaping).
            update_fn(np, *arrays, self._whole_work(param, work_count), **scalars)
            return
        starts = range(0, size, BLOCK_SIZE)
        workers = min(get_num_threads(), len(starts)) if size >= THREADED_MIN_SIZE else 1
        if workers == 1:
            self._run_blocks(update_fn, flat, starts, 0, work_count, scalars)
            return
        per_worker = -(-len(starts) // workers)
        pool = executor(workers)
        jobs = [
            pool.submit(
                self._run_blocks,
                update_fn,
                flat,
                starts[index * per_worker : (index + 1) * per_worker],
                index,
                work_count,
                scalars,
            )
            for index in range(workers)
        ]
        for job in jobs:
            job.result()

    def _work_arrays(self, worker: int, dtype, needed: int, work_count: int) -> list:
        """The flat work arrays of ``worker`` (at least ``work_count`` of ``needed`` elements)."""
        key = (worker, dtype)
        work = self.workspace.get(key)
        if work is None or len(work) < work_count or work[0].size < needed:
            length = max(needed, work[0].size if work else 0)
            count = max(work_count, len(work) if work else 0)
            work = self.workspace[key] = [np.empty(length, dtype) for _ in range(count)]
            self.work_views.clear()  # views of the replaced arrays are stale
        return work

    def _whole_work(self, param, work_count: int) -> list:
        """``work_count`` work arrays shaped like ``param`` (at most ``WHOLE_SIZE`` elements)."""
        key = (param.shape, param.dtype, work_count)
        views = self.work_views.get(key)
        if views is None:
            work = self._work_arrays(0, param.dtype, param.size, work_count)
            views = [w[: param.size].reshape(param.shape) for w in work[:work_count]]
            self.work_views[key] = views
        return views

    def _run_blocks(self, update_fn, flat, starts, worker, work_count, scalars) -> None:
        size = flat[0].size
        work = self._work_arrays(worker, flat[0].dtype, min(BLOCK_SIZE, size), work_count)
        for start in starts:
            stop = min(start + BLOCK_SIZE, size)
            block = tuple(None if a is None else a[start:stop] for a in flat)
            update_fn(np, *block, [w[: stop - start] for w in work[:work_count]], **scalars)


# ----- the fused forms of the textbook rules: state as the rule keeps it, arrays to the driver --
def sgd(runner: BlockedRunner, param, grad, state: dict, group: dict) -> None:
    """``SGD.update``, fused."""
    first_step = False
    if group["momentum"] and state.get("momentum_buffer") is None:
        state["momentum_buffer"] = array_namespace(param).empty_like(param)
        first_step = True
    runner.run(
        sgd_update,
        (param, grad, state.get("momentum_buffer")),
        2,
        lr=group["lr"],
        momentum=group["momentum"],
        dampening=group["dampening"],
        nesterov=group["nesterov"],
        weight_decay=group["weight_decay"],
        maximize=group["maximize"],
        first_step=first_step,
    )


def adam(runner: BlockedRunner, param, grad, state: dict, group: dict) -> None:
    """``Adam.update`` (and so AdamW's), fused."""
    state["step"] += 1
    step = state["step"]
    beta1, beta2 = group["betas"]
    if group["amsgrad"] and state.get("max_exp_avg_sq") is None:  # amsgrad switched on later
        state["max_exp_avg_sq"] = array_namespace(param).zeros_like(param)
    runner.run(
        adam_update,
        (
            param,
            grad,
            state["exp_avg"],
            state["exp_avg_sq"],
            state["max_exp_avg_sq"] if group["amsgrad"] else None,
        ),
        2,
        lr=group["lr"],
        beta1=beta1,
        beta2=beta2,
        eps=group["eps"],
        weight_decay=group["weight_decay"],
        decoupled_weight_decay=group["decoupled_weight_decay"],
        maximize=group["maximize"],
        step_size=group["lr"] / (1.0 - beta1**step),
        bias_correction2_sqrt=math.sqrt(1.0 - beta2**step),
    )


def rmsprop(runner: BlockedRunner, param, grad, state: dict, group: dict) -> None:
    """``RMSprop.update``, fused."""
    state["step"] += 1
    xp = array_namespace(param)
    # a group may switch momentum or centering on after the first step
    if group["momentum"] > 0 and state.get("momentum_buffer") is None:
        state["momentum_buffer"] = xp.zeros_like(param)
    if group["centered"] and state.get("grad_avg") is None:
        state["grad_avg"] = xp.zeros_like(param)
    runner.run(
        rmsprop_update,
        (
            param,
            grad,
            state["square_avg"],
            state["grad_avg"] if group["centered"] else None,
            state["momentum_buffer"] if group["momentum"] > 0 else None,
        ),
        2,
        lr=group["lr"],
        alpha=group["alpha"],
        eps=group["eps"],
        weight_decay=group["weight_decay"],
        momentum=group["momentum"],
        maximize=group["maximize"],
    )


def adagrad(runner: BlockedRunner, param, grad, state: dict, group: dict) -> None:
    """``Adagrad.update``, fused."""
    state["step"] += 1
    runner.run(
        adagrad_update,
        (param, grad, state["sum"]),
        2,
        clr=group["lr"] / (1.0 + (state["step"] - 1) * group["lr_decay"]),
        eps=group["eps"],
        weight_decay=group["weight_decay"],
        maximize=group["maximize"],
    )


def adadelta(runner: BlockedRunner, param, grad, state: dict, group: dict) -> None:
    """``Adadelta.update``, fused."""
    state["step"] += 1
    runner.run(
        adadelta_update,
        (param, grad, state["square_avg"], state["acc_delta"]),
        3,
        lr=group["lr"],
        rho=group["rho"],
        eps=group["eps"],
        weight_decay=group["weight_decay"],
        maximize=group["maximize"],
    )


def lion(runner: BlockedRunner, param, grad, state: dict, group: dict) -> None:
    """``Lion.update``, fused."""
    state["step"] += 1
    beta1, beta2 = group["betas"]
    runner.run(
        lion_update,
        (param, grad, state["exp_avg"]),
        2,
        lr=group["lr"],
        beta1=beta1,
        beta2=beta2,
        weight_decay=group["weight_decay"],
        maximize=group["maximize"],
    )


# each textbook ``update`` (module.Class.update) and the fused form that stands in for it
FUSED_FORMS: dict[str, Callable] = {
    "buildingai.optim.sgd.SGD.update": sgd,
    "buildingai.optim.adam.Adam.update": adam,
    "buildingai.optim.rmsprop.RMSprop.update": rmsprop,
    "buildingai.optim.adagrad.Adagrad.update": adagrad,
    "buildingai.optim.adadelta.Adadelta.update": adadelta,
    "buildingai.optim.lion.Lion.update": lion,
}


# ----- the array updates: one step on arrays of one shape, in place ---------------------------
def effective_gradient(xp, param, grad, out, scratch, *, weight_decay: float, maximize: bool):
    """The gradient an update rule follows: ``grad`` negated when maximizing, plus the L2 term
    ``weight_decay * param``. Returns ``grad`` itself when neither applies, else ``out``
    (``scratch`` is clobbered). All arrays share one shape."""
    if not maximize and not weight_decay:
        return grad
    if maximize:
        xp.negative(grad, out=out)
    else:
        xp.copyto(out, grad)
    if weight_decay:
        xp.multiply(param, weight_decay, out=scratch)
        out += scratch
    return out


@compiled_twin(
    "optim.sgd",
    params=("lr", "momentum", "dampening", "nesterov", "weight_decay", "maximize", "first_step"),
)
def sgd_update(
    xp,
    param,
    grad,
    momentum_buffer,
    work,
    *,
    lr: float,
    momentum: float,
    dampening: float,
    nesterov: bool,
    weight_decay: float,
    maximize: bool,
    first_step: bool,
) -> None:
    """One SGD step on arrays of one shape, in place (``work``: two scratch arrays).

    g = ±grad + weight_decay * param
    buf = g on the first step, else momentum * buf + (1 - dampening) * g
    d = g + momentum * buf (Nesterov) or buf (momentum) or g (plain)
    param -= lr * d

    Float32 parameters take the one-pass compiled twin where it is available
    (``kernels/compiled/optim.py``).
    """
    g = effective_gradient(
        xp, param, grad, work[0], work[1], weight_decay=weight_decay, maximize=maximize
    )
    direction = g
    if momentum:
        if first_step:
            xp.copyto(momentum_buffer, g)
        else:
            axpby(xp, 1.0 - dampening, g, momentum, momentum_buffer, work[1])
        if nesterov:
            xp.multiply(momentum_buffer, momentum, out=work[1])
            xp.add(g, work[1], out=work[1])
            direction = work[1]
        else:
            direction = momentum_buffer
    # the fallback's scratch: whichever work array the direction is not (g is spent by now)
    axpby(xp, -lr, direction, 1.0, param, work[0] if direction is work[1] else work[1])


@compiled_twin(
    "optim.adam",
    params=(
        "lr",
        "beta1",
        "beta2",
        "eps",
        "weight_decay",
        "decoupled_weight_decay",
        "maximize",
        "step_size",
        "bias_correction2_sqrt",
    ),
)
def adam_update(
    xp,
    param,
    grad,
    exp_avg,
    exp_avg_sq,
    max_exp_avg_sq,
    work,
    *,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float,
    decoupled_weight_decay: bool,
    maximize: bool,
    step_size: float,
    bias_correction2_sqrt: float,
) -> None:
    """One Adam step on arrays of one shape, in place (``work``: two scratch arrays).

    g = ±grad (+ weight_decay * param unless decoupled; decoupled: param *= 1 - lr * wd)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g;  v_max = max(v_max, v) with AMSGrad
    param -= step_size * m / (sqrt(v or v_max) / bias_correction2_sqrt + eps)

    with step_size = lr / (1 - beta1**t) and bias_correction2_sqrt = sqrt(1 - beta2**t). The
    scaled sums (m, v and the parameter step) are one ``axpby`` pass each
    (``vector_blas.py``); float32 parameters take the one-pass compiled twin where it is
    available (``kernels/compiled/optim.py``).
    """
    g = effective_gradient(
        xp,
        param,
        grad,
        work[0],
        work[1],
        weight_decay=0.0 if decoupled_weight_decay else weight_decay,
        maximize=maximize,
    )
    scratch = work[1]
    axpby(xp, 1.0 - beta1, g, beta1, exp_avg, scratch)
    xp.multiply(g, g, out=scratch)
    axpby(xp, 1.0 - beta2, scratch, beta2, exp_avg_sq, scratch)
    second_moment = exp_avg_sq
    if max_exp_avg_sq is not None:
        xp.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
        second_moment = max_exp_avg_sq
    # step_size * m / (sqrt(v) / bc2 + eps) = step_size * bc2 * m / (sqrt(v) + eps * bc2):
    # one pass fewer, the same value to rounding
    denom = scratch
    xp.sqrt(second_moment, out=denom)
    denom += eps * bias_correction2_sqrt
    xp.divide(exp_avg, denom, out=denom)
    decay = 1.0 - lr * weight_decay if decoupled_weight_decay else 1.0
    axpby(xp, -step_size * bias_correction2_sqrt, denom, decay, param, denom)


def rmsprop_update(
    xp,
    param,
    grad,
    square_avg,
    grad_avg,
    momentum_buffer,
    work,
    *,
    lr: float,
    alpha: float,
    eps: float,
    weight_decay: float,
    momentum: float,
    maximize: bool,
) -> None:
    """One RMSprop step on arrays of one shape, in place (``work``: two scratch arrays).

    g = ±grad + weight_decay * param
    s = alpha * s + (1 - alpha) * g * g
    centered (grad_avg given): a = a + (1 - alpha) * (g - a);  rms = sqrt(s - a * a) + eps
    otherwise rms = sqrt(s) + eps
    momentum: buf = momentum * buf + g / rms;  param -= lr * buf
    otherwise param -= lr * g / rms
    """
    g = effective_gradient(
        xp, param, grad, work[0], work[1], weight_decay=weight_decay, maximize=maximize
    )
    scratch = work[1]
    xp.multiply(g, g, out=scratch)
    scratch *= 1.0 - alpha
    square_avg *= alpha
    square_avg += scratch
    rms = work[1]
    if grad_avg is not None:
        xp.subtract(g, grad_avg, out=scratch)
        scratch *= 1.0 - alpha
        grad_avg += scratch
        xp.multiply(grad_avg, grad_avg, out=rms)
        xp.subtract(square_avg, rms, out=rms)
        xp.sqrt(rms, out=rms)
    else:
        xp.sqrt(square_avg, out=rms)
    rms += eps
    xp.divide(g, rms, out=rms)
    if momentum_buffer is not None:
        momentum_buffer *= momentum
        momentum_buffer += rms
        xp.multiply(momentum_buffer, lr, out=rms)
    else:
        rms *= lr
    param -= rms


def adagrad_update(
    xp,
    param,
    grad,
    state_sum,
    work,
    *,
    clr: float,
    eps: float,
    weight_decay: float,
    maximize: bool,
) -> None:
    """One Adagrad step on arrays of one shape, in place (``work``: two scratch arrays).

    g = ±grad + weight_decay * param
    sum += g * g
    param -= clr * g / (sqrt(sum) + eps),  clr = lr / (1 + (t - 1) * lr_decay)
    """
    g = effective_gradient(
        xp, param, grad, work[0], work[1], weight_decay=weight_decay, maximize=maximize
    )
    scratch = work[1]
    xp.multiply(g, g, out=scratch)
    state_sum += scratch
    xp.sqrt(state_sum, out=scratch)
    scratch += eps
    xp.divide(g, scratch, out=scratch)
    scratch *= clr
    param -= scratch


def adadelta_update(
    xp,
    param,
    grad,
    square_avg,
    acc_delta,
    work,
    *,
    lr: float,
    rho: float,
    eps: float,
    weight_decay: float,
    maximize: bool,
) -> None:
    """One Adadelta step on arrays of one shape, in place (``work``: three scratch arrays).

    g = ±grad + weight_decay * param
    s = rho * s + (1 - rho) * g * g
    delta = sqrt(acc + eps) / sqrt(s + eps) * g
    acc = rho * acc + (1 - rho) * delta * delta
    param -= lr * delta
    """
    g = effective_gradient(
        xp, param, grad, work[0], work[1], weight_decay=weight_decay, maximize=maximize
    )
    std, delta = work[1], work[2]
    xp.multiply(g, g, out=std)
    std *= 1.0 - rho
    square_avg *= rho
    square_avg += std
    xp.add(square_avg, eps, out=std)
    xp.sqrt(std, out=std)
    xp.add(acc_delta, eps, out=delta)
    xp.sqrt(delta, out=delta)
    delta /= std
    delta *= g
    xp.multiply(delta, delta, out=std)
    std *= 1.0 - rho
    acc_delta *= rho
    acc_delta += std
    delta *= lr
    param -= delta


def lion_update(
    xp,
    param,
    grad,
    exp_avg,
    work,
    *,
    lr: float,
    beta1: float,
    beta2: float,
    weight_decay: float,
    maximize: bool,
) -> None:
    """One Lion step on arrays of one shape, in place (``work``: two scratch arrays).

    c = beta1 * m + (1 - beta1) * g
    param -= lr * (sign(c) + weight_decay * param)   (decoupled weight decay)
    m = beta2 * m + (1 - beta2) * g
    """
    g = effective_gradient(xp, param, grad, work[0], work[1], weight_decay=0.0, maximize=maximize)
    if weight_decay:
        param *= 1.0 - lr * weight_decay
    direction = work[1]
    xp.subtract(g, exp_avg, out=direction)  # c = m + (1 - beta1) (g - m)
    direction *= 1.0 - beta1
    direction += exp_avg
    xp.sign(direction, out=direction)
    direction *= lr
    param -= direction
    scratch = work[1]
    xp.subtract(g, exp_avg, out=scratch)  # m = m + (1 - beta2) (g - m)
    scratch *= 1.0 - beta2
    exp_avg += scratch
