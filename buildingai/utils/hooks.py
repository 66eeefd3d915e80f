"""``RemovableHandle``: what every ``register_*_hook`` returns, to take its hook back out.

Tensor gradient hooks (autograd), module hooks (nn) and optimizer step hooks (optim) all return
it; it lives on the helpers floor so that each of them may import it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

_handle_ids = itertools.count()


class RemovableHandle:
    """``handle.remove()`` unregisters the hook it was returned for, once; leaving
    ``with handle: ...`` removes it too. ``handle.id`` is unique among all handles.

    ``hooks`` is the container the hook lives in: a dict keyed by ``handle.id`` (the registrar
    stores ``hooks[handle.id] = hook``), or a list that holds ``hook`` itself, for hooks that are
    run in order from a plain list. ``on_remove`` is called once when the hook is taken out.

    Example::

        handle = model.register_forward_hook(print_shapes)
        model(x)            # prints
        handle.remove()
        with model.register_forward_hook(print_shapes):
            model(x)        # prints only inside the block
    """

    def __init__(
        self,
        hooks: dict | list,
        hook: Callable | None = None,
        *,
        on_remove: Callable[[], None] | None = None,
    ) -> None:
        if isinstance(hooks, list) and hook is None:
            raise TypeError("a handle over a list of hooks needs the hook it removes")
        self.id = next(_handle_ids)
        self._hooks = hooks
        self._hook = hook
        self._on_remove = on_remove

    def remove(self) -> None:
        if isinstance(self._hooks, dict):
            removed = self._hooks.pop(self.id, None) is not None
        else:
            positions = [i for i, entry in enumerate(self._hooks) if entry is self._hook]
            removed = bool(positions)
            if removed:
                del self._hooks[positions[0]]
        if removed and self._on_remove is not None:
            self._on_remove()

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc_info) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"RemovableHandle(id={self.id})"
