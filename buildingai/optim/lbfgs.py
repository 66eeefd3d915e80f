"""L-BFGS: a quasi-Newton method that builds its step from the last ``history_size`` changes of
the parameters and gradients, with an optional strong-Wolfe line search.

The algorithm is PyTorch's ``torch.optim.LBFGS`` (after minFunc), step by step, so the same
problem from the same start gives the same parameters to rounding. It works on all parameters
at once as one flat vector, and needs a ``closure`` that re-evaluates the loss and its
gradients: ``optimizer.step(closure)`` may call it many times.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..autograd import enable_grad
from ..backend import CPU, array_namespace, to_device
from .optimizer import OptimizerBase, OptimizerError, _bump_version, check_hyperparameter

LINE_SEARCHES = (None, "strong_wolfe")
_HISTORY = ("old_dirs", "old_stps", "ro", "al")  # lists in the state, one entry per past step


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, kept
    within ``bounds`` (the interval between x1 and x2 by default); the middle of the bounds
    when the cubic has no minimum."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def strong_wolfe(
    evaluate: Callable,
    x: list,
    t,
    d,
    f: float,
    g,
    gtd,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
):
    """A step length ``t`` along direction ``d`` that satisfies the strong Wolfe conditions:
    sufficient decrease ``f(t) <= f + c1 * t * gtd`` and small slope ``|g(t) . d| <= -c2 * gtd``.

    ``evaluate(x, t, d)`` returns the loss and flat gradient at ``x + t * d``. First brackets an
    interval that holds such a point (growing ``t`` by cubic extrapolation), then narrows it by
    cubic interpolation ("zoom"), with at most ``max_ls`` evaluations in all. Returns the loss,
    the flat gradient and ``t`` of the best point found, and the number of evaluations.
    """
    d_norm = abs(d).max()
    g = g.copy()
    f_new, g_new = evaluate(x, t, d)
    evaluations = 1
    gtd_new = g_new.dot(d)

    # bracket an interval containing a point that satisfies the conditions
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        # extrapolate: a longer step, between 1.01 and 10 times the current one
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        previous = t
        t = _cubic_interpolate(
            t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step)
        )
        t_prev, f_prev, g_prev, gtd_prev = previous, f_new, g_new.copy(), gtd_new
        f_new, g_new = evaluate(x, t, d)
        evaluations += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom: shrink the bracket until a point satisfies the conditions
    insufficient_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break  # the bracket is too small to matter
        t = _cubic_interpolate(
            bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]
        )
        # A point too close to an end of the bracket makes little progress: the second time
        # in a row (or at the end itself), move it a tenth of the bracket inside.
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insufficient_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False

        f_new, g_new = evaluate(x, t, d)
        evaluations += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1

        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            # not enough decrease, or no lower than the low end: the new point is the high end
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = g_new.copy(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                # the old low end becomes the high end
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = g_new.copy(), gtd_new

    return bracket_f[low], bracket_g[low], bracket[low], evaluations


def _two_loop(flat_grad, old_dirs: list, old_stps: list, ro: list, H_diag, al: list):  # noqa: N803
    """``-H g`` by the L-BFGS two-loop recursion over the remembered pairs (s_i = old_stps[i],
    y_i = old_dirs[i], ro_i = 1 / y_i.s_i), starting from the estimate ``H_diag * I``. ``al``
    holds the first loop's coefficients (the state keeps it, as PyTorch's does)."""
    q = -flat_grad
    for i in range(len(old_dirs) - 1, -1, -1):
        al[i] = old_stps[i].dot(q) * ro[i]
        q += -al[i] * old_dirs[i]
    r = q * H_diag
    for i in range(len(old_dirs)):
        be_i = old_dirs[i].dot(r) * ro[i]
        r += (al[i] - be_i) * old_stps[i]
    return r


class LBFGS(OptimizerBase):
    """Limited-memory BFGS (PyTorch's ``torch.optim.LBFGS``: same arguments, same algorithm).

    Args:
        params: the tensors to optimise (one parameter group only).
        lr: the step length (the line search's first trial step with ``"strong_wolfe"``).
        max_iter: the most iterations per ``step()``.
        max_eval: the most closure evaluations per ``step()`` (``max_iter * 5 // 4``).
        tolerance_grad: stop when every gradient element is at most this in magnitude.
        tolerance_change: stop when the loss or the parameters change less than this.
        history_size: how many past steps the inverse-Hessian estimate remembers.
        line_search_fn: None (fixed steps of ``lr``) or ``"strong_wolfe"``.

    ``step(closure)`` needs the closure: it clears the gradients, computes the loss, calls
    ``backward()`` and returns the loss; it runs with gradients on. ``step`` returns the
    closure's first loss. The state is global and, as in PyTorch, kept under the first
    parameter: ``func_evals``, ``n_iter``, the last direction ``d`` and step ``t``, the
    histories ``old_dirs``, ``old_stps``, ``ro`` and ``al``, ``H_diag``, ``prev_flat_grad`` and
    ``prev_loss``. It needs ``(2 * history_size + 3)`` flat copies of the parameters in memory.
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        check_hyperparameter("LBFGS", "lr", lr)
        check_hyperparameter("LBFGS", "tolerance_grad", tolerance_grad)
        check_hyperparameter("LBFGS", "tolerance_change", tolerance_change)
        for name, value in (("max_iter", max_iter), ("history_size", history_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise OptimizerError(
                    f"LBFGS: {name} must be a positive integer, got {value!r}",
                    help=f"pass e.g. {name}={20 if name == 'max_iter' else 100}",
                )
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if line_search_fn not in LINE_SEARCHES:
            raise OptimizerError(
                f"LBFGS: unknown line_search_fn {line_search_fn!r}",
                help="pass line_search_fn='strong_wolfe', or None for fixed steps of lr",
            )
        defaults = dict(
            lr=lr,
            max_iter=max_iter,
            max_eval=max_eval,
            tolerance_grad=tolerance_grad,
            tolerance_change=tolerance_change,
            history_size=history_size,
            line_search_fn=line_search_fn,
        )
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise OptimizerError(
                f"LBFGS takes one parameter group, got {len(self.param_groups)}",
                help="pass a plain list of tensors: L-BFGS has no per-parameter options",
            )
        self._params = self.param_groups[0]["params"]
        self._numel = sum(param.size for param in self._params)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        if self.param_groups:
            raise OptimizerError(
                "LBFGS takes one parameter group; add_param_group cannot add another",
                help="create the optimizer with every tensor to optimise in one list",
            )
        super().add_param_group(param_group)

    # ----- the parameters as one flat vector ----------------------------------------------------
    def _gather_flat_grad(self):
        """Every gradient, flattened and concatenated (zeros for a parameter without one)."""
        xp = array_namespace(self._params[0].array)
        pieces = [
            xp.zeros(param.size, dtype=param.dtype)
            if param.grad is None
            else param.grad.array.reshape(-1)
            for param in self._params
        ]
        return xp.concatenate(pieces)

    def _add_grad(self, step_size, update) -> None:
        """Move the parameters by ``step_size * update`` (a flat vector), in place."""
        offset = 0
        for param in self._params:
            count = param.size
            param.array += step_size * update[offset : offset + count].reshape(param.shape)
            _bump_version(param, "LBFGS")
            offset += count

    def _clone_param(self) -> list:
        return [param.array.copy() for param in self._params]

    def _set_param(self, values: list) -> None:
        for param, value in zip(self._params, values):
            param.array[...] = value
            _bump_version(param, "LBFGS")

    def _directional_evaluate(self, closure, x: list, t, d):
        """The loss and flat gradient at ``x + t * d``; the parameters are put back to ``x``."""
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # ----- the step -----------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None):
        """Run up to ``max_iter`` L-BFGS iterations; returns the closure's first loss.

        ``closure()`` re-evaluates the model: it zeroes the gradients, computes the loss, calls
        ``loss.backward()`` and returns the loss. It is called with gradients on.
        """
        if closure is None:
            raise OptimizerError(
                "LBFGS.step needs a closure that recomputes the loss and its gradients",
                help="def closure(): optimizer.zero_grad(); loss = loss_fn(model(x), y); "
                "loss.backward(); return loss  -- then optimizer.step(closure)",
            )
        if len(self.param_groups) != 1:
            raise OptimizerError(f"LBFGS takes one parameter group, got {len(self.param_groups)}")

        def evaluate():
            with enable_grad():
                return closure()

        group = self.param_groups[0]
        lr = group["lr"]
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        # the state is global; it lives under the first parameter, as in PyTorch
        state = self.state.setdefault(self._params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = evaluate()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if abs(flat_grad).max() <= tolerance_grad:
            return orig_loss  # already optimal

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag = state.get("H_diag")  # noqa: N806 - the textbook's name
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # ----- the direction: -H g, with H the L-BFGS inverse-Hessian estimate -----
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1  # noqa: N806
            else:
                y = flat_grad - prev_flat_grad  # the change of gradient
                s = d * t  # the change of parameters
                ys = y.dot(s)
                if ys > 1e-10:  # keep only pairs with positive curvature
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)  # noqa: N806 - scale of the initial estimate
                if "al" not in state:
                    state["al"] = [None] * history_size
                d = _two_loop(flat_grad, old_dirs, old_stps, ro, H_diag, state["al"])

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.copy()
            else:
                prev_flat_grad[...] = flat_grad
            prev_loss = loss

            # ----- the step length -----
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / abs(flat_grad).sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)  # the slope along d
            if gtd > -tolerance_change:
                break  # d is no descent direction, to tolerance

            ls_func_evals = 0
            if line_search_fn == "strong_wolfe":
                x_init = self._clone_param()

                def along(x, t, d):
                    return self._directional_evaluate(evaluate, x, t, d)

                loss, flat_grad, t, ls_func_evals = strong_wolfe(
                    along, x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals
                )
                self._add_grad(t, d)
                opt_cond = abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    # no evaluation after the last iteration: the next step() starts with one
                    loss = float(evaluate())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            # ----- when to stop -----
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if abs(d * t).max() <= tolerance_change:
                break  # the parameters barely move
            if abs(loss - prev_loss) < tolerance_change:
                break  # the loss barely changes

        state.update(
            d=d,
            t=t,
            old_dirs=old_dirs,
            old_stps=old_stps,
            ro=ro,
            H_diag=H_diag,
            prev_flat_grad=prev_flat_grad,
            prev_loss=prev_loss,
        )
        return orig_loss

    # ----- checkpoints --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """As ``OptimizerBase.state_dict``; the history lists hold host copies of their arrays."""
        saved = super().state_dict()
        for param_state in saved["state"].values():
            for name in _HISTORY:
                if param_state.get(name) is not None:
                    param_state[name] = [_host_copy(value) for value in param_state[name]]
        return saved

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned. The flat vectors must have as many elements
        as the parameters together; arrays take the parameters' dtype and device."""
        if "state" not in state_dict or "param_groups" not in state_dict:
            raise OptimizerError("an optimizer state dict needs 'state' and 'param_groups' entries")
        super().load_state_dict({"state": {}, "param_groups": state_dict["param_groups"]})
        saved_states = dict(state_dict["state"])
        if any(int(index) != 0 for index in saved_states):
            raise OptimizerError(
                "an LBFGS state dict keeps its state under parameter 0 only, got state for "
                f"parameters {sorted(int(index) for index in saved_states)}",
                help="load a state dict saved from LBFGS",
            )
        first = self._params[0]
        self.state = {}
        for saved in saved_states.values():
            restored = {}
            for name, value in saved.items():
                if name in _HISTORY and value is not None:
                    restored[name] = [self._restore(name, item) for item in value]
                else:
                    restored[name] = self._restore(name, value)
            self.state[first] = restored

    def _restore(self, name: str, value):
        """A saved array as an array on the parameters' device, in their dtype."""
        if value is None or not (hasattr(value, "shape") and hasattr(value, "dtype")):
            return value
        first = self._params[0]
        xp = array_namespace(first.array)
        array = np.asarray(to_device(value, CPU))
        if array.ndim and array.shape != (self._numel,):
            raise OptimizerError(
                f"LBFGS state '{name}' has shape {array.shape}, but the parameters have "
                f"{self._numel} elements together",
                help="load optimizer state saved from the same model",
            )
        if array.dtype.kind == "f":
            array = array.astype(first.dtype, copy=False)
        restored = xp.array(array, copy=True)
        return restored if restored.ndim else restored[()]


def _host_copy(value):
    if value is None or not (hasattr(value, "shape") and hasattr(value, "dtype")):
        return value
    return to_device(value, CPU).copy()


__all__ = ["LBFGS", "strong_wolfe"]
