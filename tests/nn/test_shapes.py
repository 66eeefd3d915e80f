"""Shape contracts: binding, messages (module path, argument, dimension, sizes, where bound),
ranks, literal and variadic dimensions, outputs, check_shape, and the on/off switch."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import ShapeError
from buildingai.nn import Module
from buildingai.nn import shapes as shapes_module
from buildingai.nn.shapes import (
    ShapeContractError,
    ShapeSpecError,
    check_shape,
    enable_shape_checks,
    shape_checks,
    shape_checks_enabled,
    shapes,
)


@pytest.fixture
def checks_on():
    previous = shape_checks_enabled()
    enable_shape_checks(True)
    yield
    enable_shape_checks(previous)


def t(*shape):
    return bai.zeros(*shape)


class Encoder(Module):
    @shapes("x: [batch, seq, dim], mask: [batch, seq] -> [batch, dim]")
    def forward(self, x, mask=None):
        return x.sum(axis=1)


class Model(Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = Encoder()

    def forward(self, x, mask=None):
        return self.encoder(x, mask)


@shapes("x: [batch, dim], w: [dim, out] -> [batch, out]")
def project(x, w):
    return x @ w


@shapes("x: [batch, dim], y: [batch, dim]")
def pair(x, y):
    return x


# ----- binding and mismatches ---------------------------------------------------------------------
def test_matching_shapes_pass_and_return_the_result(checks_on):
    x, w = t(4, 3), t(3, 5)
    assert project(x, w).shape == (4, 5)
    assert Model()(t(2, 7, 3), t(2, 7)).shape == (2, 3)


def test_mismatch_names_module_path_argument_dim_sizes_and_binding(checks_on):
    with pytest.raises(ShapeError) as info:
        Model()(t(2, 10, 3), t(2, 12))
    message = str(info.value)
    assert message.startswith(
        "[shapes] Encoder.forward (in Model.encoder): argument 'mask' dim 'seq' is 12 but was "
        "bound to 10 by argument 'x' (dim 1)"
    )
    assert "'mask' has shape (2, 12), expected [batch, seq]" in message
    assert "help: 'seq' must have one size throughout the call" in message
    assert info.value.where == "Model.encoder"
    assert message.count("Model.encoder") == 1  # the path is not printed twice


def test_top_level_module_and_plain_function_are_named(checks_on):
    with pytest.raises(ShapeError, match=r"^\[shapes\] Encoder.forward \(in Encoder\): "):
        Encoder()(t(2, 10, 3), t(3, 10))
    with pytest.raises(ShapeContractError) as info:
        project(t(4, 3), t(2, 5))
    assert str(info.value).startswith(
        "[shapes] project: argument 'w' dim 'dim' is 2 but was bound to 3 by argument 'x' (dim 1)"
    )
    assert info.value.where is None


def test_keyword_arguments_defaults_and_none(checks_on):
    assert project(w=t(3, 5), x=t(4, 3)).shape == (4, 5)
    with pytest.raises(ShapeError, match="argument 'w' dim 'dim' is 6"):
        project(t(4, 3), w=t(6, 5))
    # An optional argument left as None is not checked.
    assert Encoder()(t(2, 10, 3)).shape == (2, 3)
    assert Encoder()(t(2, 10, 3), mask=None).shape == (2, 3)


def test_wrong_rank_names_both_ranks(checks_on):
    with pytest.raises(ShapeError) as info:
        Encoder()(t(2, 10))
    assert (
        "argument 'x' has 2 dimensions but the contract [batch, seq, dim] needs 3 "
        "(shape (2, 10))" in str(info.value)
    )


def test_literal_dims(checks_on):
    @shapes("images: [batch, 3, 32, 32] -> [batch, 10]")
    def classify(images):
        return bai.zeros(images.shape[0], 10)

    assert classify(t(5, 3, 32, 32)).shape == (5, 10)
    with pytest.raises(ShapeError) as info:
        classify(t(5, 3, 28, 32))
    assert (
        "argument 'images' dim 2 is 28 but the contract requires 32 (shape (5, 3, 28, 32), "
        "expected [batch, 3, 32, 32])" in str(info.value)
    )


def test_ellipsis_and_underscore(checks_on):
    @shapes("x: [..., dim], y: [_, dim] -> [..., dim]")
    def f(x, y):
        return x

    assert f(t(3), t(9, 3)).shape == (3,)  # '...' may be empty
    assert f(t(2, 4, 5, 3), t(7, 3)).shape == (2, 4, 5, 3)
    with pytest.raises(ShapeError, match=r"argument 'y' dim 'dim' is 4 but was bound to 3 by "):
        f(t(2, 3), t(1, 4))
    with pytest.raises(
        ShapeError, match=r"has no dimensions \(a 0-d tensor\) but the contract \[\.\.\., dim\] "
    ):
        f(t(), t(1, 3))
    with pytest.raises(ShapeError, match=r"needs at least 1"):
        f(t(), t(1, 3))


def test_ellipsis_in_the_middle_reports_the_real_axis(checks_on):
    @shapes("x: [batch, ..., 2]")
    def f(x):
        return x

    f(t(3, 2))
    f(t(3, 5, 6, 2))
    with pytest.raises(ShapeError, match=r"argument 'x' dim 3 is 4 but the contract requires 2"):
        f(t(3, 5, 6, 4))


def test_named_group_binds_several_dims(checks_on):
    @shapes("x: [*lead, dim], scale: [*lead] -> [*lead, dim]")
    def f(x, scale):
        return x

    f(t(2, 3, 4), t(2, 3))
    f(t(4), t())  # an empty group
    with pytest.raises(ShapeError) as info:
        f(t(2, 3, 4), t(2, 5))
    assert (
        "argument 'scale' dims '*lead' are (2, 5) but were bound to (2, 3) by argument 'x' "
        "(dims 0-1)" in str(info.value)
    )


def test_outputs_single_tuple_and_count(checks_on):
    @shapes("x: [batch, dim] -> ([batch, dim], [batch])")
    def two(x, drop_last=False):
        return (x, x.sum(axis=1)[:-1] if drop_last else x.sum(axis=1))

    out, norms = two(t(4, 3))
    assert out.shape == (4, 3) and norms.shape == (4,)
    with pytest.raises(ShapeError, match=r"output 1 dim 'batch' is 3 but was bound to 4 by "):
        two(t(4, 3), drop_last=True)

    @shapes("x: [batch, dim] -> ([batch, dim], [batch])")
    def one(x):
        return x

    with pytest.raises(ShapeError) as info:
        one(t(4, 3))
    assert "returned 1 value(s) but the contract lists 2 outputs ([batch, dim], [batch])" in str(
        info.value
    )

    @shapes("x: [batch] -> [batch, new]")
    def widen(x, width):
        return bai.zeros(x.shape[0] + (width == 0), max(width, 1))

    assert widen(t(3), 5).shape == (3, 5)  # 'new' binds from the output
    with pytest.raises(ShapeError, match=r"the output dim 'batch' is 4 but was bound to 3"):
        widen(t(3), 0)


def test_scalar_outputs_and_arrays(checks_on):
    @shapes("x: [n] -> []")
    def total(x):
        return x.sum()

    assert total(t(3)).shape == ()
    assert total(np.zeros(3)).shape == ()  # anything with a .shape is checked

    @shapes("x: [n] -> []")
    def not_scalar(x):
        return x

    with pytest.raises(ShapeError, match=r"the output has 1 dimension but the contract \[\] "):
        not_scalar(t(3))


def test_non_tensor_argument(checks_on):
    with pytest.raises(ShapeError) as info:
        project(3, t(3, 5))
    assert "argument 'x' is of type int, not a tensor; the contract expects [batch, dim]" in str(
        info.value
    )


def test_each_call_has_its_own_scope(checks_on):
    @shapes("x: [batch, dim] -> [batch, dim]")
    def inner(x):
        return x

    @shapes("x: [batch, dim] -> [batch, dim]")
    def outer(x):
        inner(t(7, 2))  # a different 'batch' inside the inner call is fine
        return x

    assert outer(t(3, 2)).shape == (3, 2)
    assert outer(t(5, 2)).shape == (5, 2)  # nothing stays bound between calls


# ----- check_shape ----------------------------------------------------------------------------
def test_check_shape_binds_into_the_current_call(checks_on):
    class Block(Module):
        @shapes("x: [batch, dim]")
        def forward(self, x, hidden_rows):
            h = check_shape(bai.zeros(hidden_rows, 8), "batch hidden", name="h")
            check_shape(h, "[batch, hidden]")
            return h

    assert Block()(t(4, 3), 4).shape == (4, 8)
    with pytest.raises(ShapeError) as info:
        Block()(t(4, 3), 5)
    assert str(info.value).startswith(
        "[shapes] Block.forward (in Block): tensor 'h' dim 'batch' is 5 but was bound to 4 by "
        "argument 'x' (dim 0)"
    )


def test_check_shape_outside_a_call_uses_a_fresh_scope(checks_on):
    x = t(3, 3)
    assert check_shape(x, "n n") is x
    assert check_shape(x, "n, m") is x
    check_shape(t(2, 5), "n m")  # no binding survives between checks
    with pytest.raises(ShapeError) as info:
        check_shape(t(3, 4), "n n", name="square")
    assert str(info.value).startswith(
        "[shapes] check_shape: tensor 'square' dim 'n' is 4 but was bound to 3 by tensor "
        "'square' (dim 0)"
    )
    with pytest.raises(ShapeError, match=r"tensor 'tensor' has 2 dimensions but .* needs 3"):
        check_shape(t(3, 4), "a b c")
    with pytest.raises(ShapeError, match=r"dim 0 is 3 but the contract requires 2"):
        check_shape(t(3, 4), "2 ...")


def test_check_shape_spec_errors(checks_on):
    with pytest.raises(ShapeSpecError, match="must be a string, got tuple"):
        check_shape(t(2), ("n",))
    with pytest.raises(ShapeSpecError, match="has 2 variadic parts"):
        check_shape(t(2), "... n ...")
    with pytest.raises(ShapeSpecError, match="cannot read the dimension '-1'"):
        check_shape(t(2), "-1")


def test_check_shape_follows_the_switch():
    x = t(3, 4)
    with shape_checks(False):
        assert check_shape(x, "n") is x  # off: not checked
    with shape_checks(True), pytest.raises(ShapeError, match="needs 1"):
        check_shape(x, "n")


# ----- the switch -----------------------------------------------------------------------------
def test_off_by_default_in_a_fresh_process_and_on_with_the_environment_variable():
    # One fresh process: import with the variable unset, then re-import with each value.
    code = (
        "import importlib, os\n"
        "import buildingai.nn.shapes as s\n"
        "print(s.shape_checks_enabled())\n"
        "for value in ('1', 'true', '0'):\n"
        "    os.environ['BUILDINGAI_CHECK_SHAPES'] = value\n"
        "    print(importlib.reload(s).shape_checks_enabled())\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "BUILDINGAI_CHECK_SHAPES"}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False", "True", "True", "False"]


def test_disabled_means_no_effect():
    seen_scopes = []

    @shapes("x: [batch, 3] -> [batch]")
    def f(x):
        seen_scopes.append(list(shapes_module._scopes))
        return x

    with shape_checks(False):
        x = t(2, 5)
        assert f(x) is x  # wrong in and out, called straight through
        assert seen_scopes == [[]]  # no scope was even made
    assert f.__wrapped__ is not None and f.__shape_contract__ == "x: [batch, 3] -> [batch]"
    assert f.__name__ == "f"


def test_scoped_enabling_restores_the_previous_setting():
    enable_shape_checks(False)
    try:
        with shape_checks():
            assert shape_checks_enabled()
            with pytest.raises(ShapeError):
                pair(t(2, 3), t(4, 5))
            with shape_checks(False):
                assert pair(t(2, 3), t(4, 5)) is not None
            assert shape_checks_enabled()
        assert not shape_checks_enabled()
        pair(t(2, 3), t(4, 5))  # off again
        with pytest.raises(RuntimeError), shape_checks():
            raise RuntimeError("boom")
        assert not shape_checks_enabled()
    finally:
        enable_shape_checks(False)


def test_global_switch(checks_on):
    assert shape_checks_enabled()
    with pytest.raises(ShapeError):
        pair(t(2, 3), t(4, 5))


def test_scope_is_released_when_the_function_raises(checks_on):
    @shapes("x: [n]")
    def fails(x):
        raise KeyError("inside")

    with pytest.raises(KeyError):
        fails(t(2))
    assert shapes_module._scopes == []


# ----- malformed contracts --------------------------------------------------------------------
@pytest.mark.parametrize(
    "spec, message",
    [
        ("x: [batch, 3.5]", "cannot read the dimension '3.5'"),
        ("x: [..., n, ...]", "has 2 variadic parts"),
        ("x: [*a, *b]", "has 2 variadic parts"),
        ("x: batch, dim", "expected a shape in brackets"),
        ("x [batch]", "cannot read the argument"),
        ("x: [a,, b]", "empty dimension"),
        ("x: [a] -> [a] -> [a]", "more than one '->'"),
        ("x: [a], x: [a]", "argument 'x' appears twice"),
        (
            "y: [a]",
            "names argument 'y', but test_malformed_contracts_fail_at_decoration.<locals>.f "
            "has no such parameter (it has x, rest)",
        ),
        ("rest: [a]", "'rest' collects several arguments"),
    ],
)
def test_malformed_contracts_fail_at_decoration(spec, message):
    def f(x, *rest):
        return x

    with pytest.raises(ShapeSpecError) as info:
        shapes(spec)(f)
    assert message in str(info.value)


def test_contract_must_be_a_string():
    with pytest.raises(ShapeSpecError, match="must be a string, got list"):
        shapes(["x: [a]"])
