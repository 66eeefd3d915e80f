"""Small parameters updated together, as one flat array per parameter group.

An element-wise update rule (Adam, SGD, ...) costs a few Python calls per pass over its arrays,
whatever their size. For biases, norm weights and small matrices those calls are the whole cost.
A pack gathers a group's small parameters and their gradients into flat arrays, runs the update
rule once over them and writes the parameters back.

The pack's per-element state (Adam's moments, SGD's momentum buffer) lives in flat arrays, and
each parameter's own state holds views of them, so ``state_dict``, ``load_state_dict`` and user
code still see one array per parameter, shaped like it. A pack checks before each step that
those views are still the arrays the parameters' states hold; when anything was replaced (a
loaded checkpoint, a parameter that had no gradient this step) it is rebuilt from the
per-parameter state, so the update never runs on stale copies.

An optimizer class takes part by declaring ``updates_elementwise = True`` (its update treats
every element on its own). The switch ``optim.packed_updates`` (on with acceleration;
``packing.set_enabled(False)``, or ``BUILDINGAI_PACKED_UPDATES=0`` before BuildingAI is imported,
turns it off alone) decides; ``accel/optimizers.py`` calls :func:`update_small_together`.
"""

from __future__ import annotations

import numpy as np

from ..backend.switches import env_switch
from . import registry

ENV_VAR = "BUILDINGAI_PACKED_UPDATES"

# Parameters up to this many elements are packed. Larger ones gain nothing: their passes are
# long enough that the call overhead is small, and gathering and scattering them would add
# three passes over their memory.
PACK_MAX_SIZE = 1 << 15

PACKED_UPDATES = registry.register_switch(
    "optim.packed_updates",
    description="optimizers that declare updates_elementwise update a group's parameters of up "
    f"to {PACK_MAX_SIZE} elements as one flat array; each parameter's state stays its own, as "
    "views",
)
PACKED_UPDATES.switched_on = env_switch(ENV_VAR, default=True)


def set_enabled(enabled: bool) -> bool:
    """Pack small parameters while acceleration is on (True, the default unless
    ``BUILDINGAI_PACKED_UPDATES=0``) or update each on its own (False), process-wide. Returns
    the previous setting."""
    return registry.set_enabled(PACKED_UPDATES.name, enabled)


def packable(param) -> bool:
    """Whether ``param`` is a contiguous NumPy parameter of at least one dimension and at most
    ``PACK_MAX_SIZE`` elements (0-d state values are counters, so 0-d parameters stay on their
    own)."""
    data = param.array
    return (
        type(data) is np.ndarray
        and data.ndim > 0
        and data.size <= PACK_MAX_SIZE
        and data.flags.c_contiguous
    )


def update_small_together(packs: dict, index: int, entries: list, update, group: dict) -> list:
    """Update the packable parameters of ``entries`` (``(param, grad, state)`` of parameter
    group ``index``, every state already created) as one flat array with ``update(param, grad,
    state, group)``, and return the entries left to update one by one. ``packs`` keeps each
    group's pack between steps."""
    members, singles, dtype = [], [], None
    for entry in entries:
        param = entry[0]
        if packable(param) and (dtype is None or param.array.dtype == dtype):
            dtype = param.array.dtype
            members.append(entry)
        else:
            singles.append(entry)
    if len(members) < 2:
        return entries
    params = [param for param, _, _ in members]
    states = [state for _, _, state in members]
    pack = packs.get(index)
    if pack is None or not pack.current(params, states):
        pack = ParameterPack.build(params, states, dtype)
        packs[index] = pack
    if pack is None:  # states that differ (e.g. step counts): one by one
        return entries
    pack.step(update, group, [grad for _, grad, _ in members])
    return singles


class ParameterPack:
    """Parameters of one group and dtype, updated as one flat array.

    Args:
        params: the member Tensors (each ``packable``, one dtype).
        states: their state dicts (the optimizer's own, in the same order). Every array entry
            must be shaped like its parameter, and every other entry (step counters, None) must
            be equal across members; ``build`` returns None otherwise.

    Attributes:
        state: the flat state handed to the update rule: per-element arrays of shape (total,)
            and the members' shared scalars.
    """

    def __init__(self, params: list, states: list[dict], dtype) -> None:
        self.params, self.states, self.dtype = params, states, np.dtype(dtype)
        self.shapes = [tuple(p.shape) for p in params]
        bounds = np.cumsum([0] + [int(np.prod(shape)) for shape in self.shapes]).tolist()
        self.slices = [slice(start, stop) for start, stop in zip(bounds[:-1], bounds[1:])]
        self.total = bounds[-1]
        self.flat_param = np.empty(self.total, self.dtype)
        self.flat_grad = np.empty(self.total, self.dtype)
        self.param_views = self._views(self.flat_param)
        self.state: dict = {}
        self.flat: dict = {}  # state name -> (flat array, the members' views of it)

    @classmethod
    def build(cls, params: list, states: list[dict], dtype) -> ParameterPack | None:
        """A pack holding copies of the members' state, or None when the states differ in
        anything but their per-element arrays (e.g. Adam's step counts)."""
        if any(state.keys() != states[0].keys() for state in states):
            return None
        pack = cls(params, states, dtype)
        arrays, scalars = {}, {}
        for name, first in states[0].items():
            values = [state[name] for state in states]
            if all(_is_array(v) and tuple(v.shape) == s for v, s in zip(values, pack.shapes)):
                arrays[name] = values
            elif all(_same_scalar(v, first) for v in values):
                scalars[name] = first
            else:
                return None
        # only now, when the whole state fits, do the members' states become views
        for name, values in arrays.items():
            pack._share(name, np.concatenate([v.ravel() for v in values]).astype(dtype, copy=False))
        pack.state.update(scalars)
        return pack

    def current(self, params: list, states: list[dict]) -> bool:
        """Whether this pack still stands for ``params`` with their present ``states``: the
        same members, and their states still holding this pack's views and scalars."""
        if len(params) != len(self.params):
            return False
        for param, state, member, own in zip(params, states, self.params, self.states):
            if param is not member or state is not own:
                return False
        for name, (_, views) in self.flat.items():
            for own, view in zip(self.states, views):
                if own.get(name) is not view:
                    return False
        for name, value in self.state.items():
            if name not in self.flat:
                for own in self.states:
                    if not _same_scalar(own.get(name), value):
                        return False
        return True

    def step(self, update, group: dict, gradients: list) -> None:
        """Gather, run ``update(flat_param, flat_grad, state, group)``, share any state it
        created, write the parameters back."""
        np.concatenate([p.array.reshape(-1) for p in self.params], out=self.flat_param)
        np.concatenate([g.reshape(-1) for g in gradients], out=self.flat_grad)
        update(self.flat_param, self.flat_grad, self.state, group)
        for name, value in self.state.items():
            shared = self.flat.get(name)
            if shared is not None and shared[0] is value:
                continue
            if _is_array(value) and value.shape == (self.total,):
                self._share(name, value)  # created or replaced by the update rule
            else:
                self.flat.pop(name, None)
                for own in self.states:
                    own[name] = value
        for param, view in zip(self.params, self.param_views):
            np.copyto(param.array, view)

    def _views(self, flat) -> list:
        return [flat[part].reshape(shape) for part, shape in zip(self.slices, self.shapes)]

    def _share(self, name: str, flat) -> None:
        views = self._views(flat)
        self.state[name] = flat
        self.flat[name] = (flat, views)
        for own, view in zip(self.states, views):
            own[name] = view


def _is_array(value) -> bool:
    return isinstance(value, np.ndarray)


def _same_scalar(value, other) -> bool:
    if _is_array(value) or _is_array(other):
        return False
    return value is other or (type(value) is type(other) and value == other)
