"""The README's first example runs as written and learns its task."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_first_readme_example_trains():
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    namespace: dict = {}
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, str(README), "exec"), namespace)
    assert namespace["accuracy"].item() > 0.9, output.getvalue()
    assert "accuracy" in output.getvalue()
