"""How BuildingAI objects look in Jupyter: the HTML that ``Tensor._repr_html_`` and
``Module._repr_html_`` return (a notebook shows it instead of the plain ``repr``).

    tensor_html(bai.randn(3, 4))     # shape, dtype, device, gradient state, a few values
    module_html(model)                # one row per module: type, parameters and their shapes

Both are plain HTML with inline styles: no script, nothing fetched, safe in any notebook viewer.
"""

from __future__ import annotations

import html

import numpy as np

_BOX = "font-family: monospace; font-size: 12px; line-height: 1.35;"
_CELL = "padding: 1px 10px 1px 0; text-align: left; vertical-align: top;"
_NUMBER = "padding: 1px 10px 1px 0; text-align: right; vertical-align: top;"
_MUTED = "color: #666;"


def tensor_html(tensor) -> str:
    """A Tensor as a notebook shows it: its shape, dtype, device and gradient state on one line,
    its smallest, largest and mean value when it holds numbers, then a few values (the corners
    of a large tensor, as ``repr`` prints them)."""
    from ..backend import device as _device

    array = _device.to_device(tensor.array, _device.CPU)
    facts = [
        f"shape {tuple(tensor.shape)}",
        str(tensor.dtype),
        str(tensor.device),
    ]
    node = getattr(tensor, "_node", None)
    if node is not None:
        facts.append(f"grad_fn=&lt;{html.escape(node.op.name)}&gt;")
    elif tensor.requires_grad:
        facts.append("requires_grad")
    if tensor.grad is not None:
        facts.append("has .grad")
    stats = ""
    if array.size and (np.issubdtype(array.dtype, np.number) and array.dtype.kind != "c"):
        whole = array.dtype.kind in "iu"  # integers print whole: 999999, not 1e+06
        low, high = (
            (array.min(), array.max()) if whole else (f"{array.min():.4g}", f"{array.max():.4g}")
        )
        stats = (
            f'<div style="{_MUTED}">min {low} · max {high} · '
            f"mean {array.mean(dtype=np.float64):.4g}</div>"
        )
    shown = np.array2string(
        array, separator=", ", precision=4, threshold=60, edgeitems=3, max_line_width=100
    )
    return (
        f'<div class="buildingai-tensor" style="{_BOX}"><b>Tensor</b> '
        f"{' · '.join(facts)}{stats}"
        f'<pre style="margin: 4px 0 0;">{html.escape(shown)}</pre></div>'
    )


def module_html(module) -> str:
    """A Module as a notebook shows it: a table with one row per module (its path, type,
    settings, parameter count and each parameter's shape), then the totals: every parameter,
    the trainable ones, and their bytes. A parameter shared by modules is counted once."""
    rows = []
    counted: set[int] = set()
    total = trainable = size = 0
    for name, child in module.named_modules():
        depth = name.count(".") + 1 if name else 0
        own = [(key, p) for key, p in child._parameters.items() if p is not None]
        count = 0
        shapes = []
        for key, param in own:
            shapes.append(f"{key} {tuple(param.shape)}")
            if id(param) in counted:
                continue
            counted.add(id(param))
            count += param.numel()
            total += param.numel()
            size += param.array.nbytes
            if param.requires_grad:
                trainable += param.numel()
        label = name.rsplit(".", 1)[-1] if name else "(model)"
        settings = child.extra_repr().replace("\n", " ")
        rows.append(
            "<tr>"
            f'<td style="{_CELL} padding-left: {depth * 14}px;">{html.escape(label)}</td>'
            f'<td style="{_CELL}">{html.escape(type(child).__name__)}'
            f'<span style="{_MUTED}">{"(" + html.escape(settings) + ")" if settings else ""}'
            "</span></td>"
            f'<td style="{_NUMBER}">{f"{count:,}" if own else ""}</td>'
            f'<td style="{_CELL} {_MUTED}">{html.escape(", ".join(shapes))}</td>'
            "</tr>"
        )
    return (
        f'<div class="buildingai-module" style="{_BOX}"><table style="border-collapse: collapse;">'
        f'<thead><tr><th style="{_CELL}">module</th><th style="{_CELL}">type</th>'
        f'<th style="{_NUMBER}">parameters</th><th style="{_CELL}">shapes</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        f'<div style="margin-top: 4px;">{total:,} parameters ({trainable:,} trainable), '
        f"{_bytes(size)}</div></div>"
    )


def _bytes(count: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:,} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")
