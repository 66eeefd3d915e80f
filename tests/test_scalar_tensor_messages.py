"""Errors about a 0-d tensor call it "a 0-d tensor", never "a tensor with 0 dimensions"."""

import re
from pathlib import Path

import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.errors import dimensions, tensor_with_dimensions

SCALAR = bai.tensor(1.0)

CALLS = {
    "permute": lambda: SCALAR.permute(1),
    "permute all": lambda: SCALAR.permute(0),
    "transpose": lambda: SCALAR.transpose(0, 1),
    "mT": lambda: SCALAR.mT,
    "movedim": lambda: SCALAR.moveaxis(0, 1),
    "mean": lambda: SCALAR.mean(dim=1),
    "softmax": lambda: F.softmax(SCALAR, 1),
    "concatenate": lambda: bai.cat([bai.ones(2), SCALAR]),
    "getitem": lambda: SCALAR[0],
    "take_along_axis": lambda: SCALAR.take_along_axis(bai.tensor([0]), 0),
    "einsum": lambda: bai.einsum("ij->i", SCALAR),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_errors_about_a_0_d_tensor_say_0_d(name):
    with pytest.raises(bai.BuildingAIError) as caught:
        CALLS[name]()
    message = str(caught.value)
    assert "0 dimensions" not in message and "0-d tensor" in message, message


def test_the_counting_helpers():
    assert dimensions(0) == "no dimensions (a 0-d tensor)"
    assert dimensions(1) == "1 dimension" and dimensions(3) == "3 dimensions"
    assert tensor_with_dimensions(0) == "a 0-d tensor"
    assert tensor_with_dimensions(2) == "a tensor with 2 dimensions"


def test_no_message_in_the_package_counts_dimensions_with_a_bare_number():
    # "{x.ndim} dimensions" reads "0 dimensions" for a 0-d tensor: use errors.dimensions()
    pattern = re.compile(r"\{[^{}]*\b(ndim|rank|len\([^{}]*shape[^{}]*\))[^{}]*\} dimensions")
    root = Path(bai.__file__).parent
    found = [
        f"{path.relative_to(root)}:{number}: {line.strip()}"
        for path in sorted(root.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, "\n".join(found)
