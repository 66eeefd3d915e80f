"""The Markdown block extractor behind the documentation tests: which blocks it finds, where,
and the skip and slow markers."""

from __future__ import annotations

from .markdown_blocks import python_blocks

PAGE = """# A page

```python
a = 1
```

<!-- skip: needs a GPU -->
```python
b = a.cuda()
```

- a list item:

  <!-- slow -->
  ```python
  for step in range(10):
      a += step
  ```

```bash
python not_this.py
```

````markdown
```python
inside_another_fence = True
```
````
"""


def test_blocks_markers_and_lines(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    blocks = python_blocks(page)
    assert [block.line for block in blocks] == [3, 8, 15]
    assert blocks[0].code == "a = 1\n" and blocks[0].skip is None and not blocks[0].slow
    assert blocks[1].skip == "needs a GPU"
    assert blocks[2].slow and blocks[2].skip is None
    assert blocks[2].code == "for step in range(10):\n    a += step\n"  # dedented out of the list
    namespace: dict = {}
    for block in (blocks[0], blocks[2]):
        exec(block.code, namespace)
    assert namespace["a"] == 46
