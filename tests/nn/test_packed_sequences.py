"""nn.utils.rnn (PackedSequence, packing, padding) and RNN / LSTM / GRU over packed batches,
against PyTorch in float64: values, batch sizes, permutations, and the gradients of inputs,
initial states and every parameter; PyTorch's documentation examples; freezing; errors."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import ArgumentError, DTypeError, ShapeError
from buildingai.graph import freeze
from buildingai.graph.graph import GraphError
from buildingai.nn.utils.rnn import (
    PackedSequence,
    invert_permutation,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)

torch = pytest.importorskip("torch")
tr = torch.nn.utils.rnn

TIGHT = {"rtol": 1e-10, "atol": 1e-12}
GRAD = {"rtol": 1e-9, "atol": 1e-12}


def _pair(array: np.ndarray):
    """The same array as a BuildingAI and a PyTorch tensor, both requiring gradients."""
    return (
        bai.Tensor(array.copy(), requires_grad=True),
        torch.tensor(array.copy(), requires_grad=True),
    )


def _backward(ours: bai.Tensor, theirs, seed: int = 0) -> None:
    """Backpropagate the same random weighting of ``ours`` and ``theirs``."""
    weight = np.random.default_rng(seed).standard_normal(tuple(theirs.shape))
    (ours * bai.Tensor(weight)).sum().backward()
    (theirs * torch.tensor(weight)).sum().backward()


def _same_packed(ours: PackedSequence, theirs) -> None:
    """Data, batch sizes and both permutations equal, with PyTorch's dtypes."""
    np.testing.assert_allclose(ours.data.numpy(), theirs.data.detach().numpy(), **TIGHT)
    assert ours.data.dtype == str(theirs.data.dtype).replace("torch.", "")
    assert ours.batch_sizes.dtype == "int64"
    np.testing.assert_array_equal(ours.batch_sizes.numpy(), theirs.batch_sizes.numpy())
    for mine, their in [
        (ours.sorted_indices, theirs.sorted_indices),
        (ours.unsorted_indices, theirs.unsorted_indices),
    ]:
        assert (mine is None) == (their is None)
        if mine is not None:
            assert mine.dtype == "int64"
            np.testing.assert_array_equal(mine.numpy(), their.numpy())


# ----- PyTorch's documentation examples (verbatim, the import changed) ---------------------------


def test_pad_packed_sequence_documentation_example():
    torch = bai  # noqa: F841 - the example's spelling
    seq = torch.tensor([[1, 2, 0], [3, 0, 0], [4, 5, 6]])
    lens = [2, 1, 3]
    packed = pack_padded_sequence(seq, lens, batch_first=True, enforce_sorted=False)
    assert repr(packed) == (
        "PackedSequence(data=tensor([4, 1, 3, 5, 2, 6]), batch_sizes=tensor([3, 2, 1]), "
        "sorted_indices=tensor([2, 0, 1]), unsorted_indices=tensor([1, 2, 0]))"
    )
    seq_unpacked, lens_unpacked = pad_packed_sequence(packed, batch_first=True)
    np.testing.assert_array_equal(seq_unpacked.numpy(), [[1, 2, 0], [3, 0, 0], [4, 5, 6]])
    np.testing.assert_array_equal(lens_unpacked.numpy(), [2, 1, 3])


def test_pad_sequence_documentation_example():
    torch = bai
    a = torch.ones(25, 300)
    b = torch.ones(22, 300)
    c = torch.ones(15, 300)
    assert pad_sequence([a, b, c]).size() == (25, 3, 300)


def test_unpad_sequence_documentation_example():
    torch = bai
    a = torch.ones(25, 300)
    b = torch.ones(22, 300)
    c = torch.ones(15, 300)
    sequences = [a, b, c]
    padded_sequences = pad_sequence(sequences)
    lengths = torch.as_tensor([v.size(0) for v in sequences])
    unpadded_sequences = unpad_sequence(padded_sequences, lengths)
    assert torch.allclose(sequences[0], unpadded_sequences[0])
    assert torch.allclose(sequences[1], unpadded_sequences[1])
    assert torch.allclose(sequences[2], unpadded_sequences[2])


def test_pack_sequence_documentation_example():
    torch = bai
    a = torch.tensor([1, 2, 3])
    b = torch.tensor([4, 5])
    c = torch.tensor([6])
    assert repr(pack_sequence([a, b, c])) == (
        "PackedSequence(data=tensor([1, 4, 6, 2, 5, 3]), batch_sizes=tensor([3, 2, 1]), "
        "sorted_indices=None, unsorted_indices=None)"
    )


def test_unpack_sequence_documentation_example():
    torch = bai
    a = torch.tensor([1, 2, 3])
    b = torch.tensor([4, 5])
    c = torch.tensor([6])
    sequences = [a, b, c]
    assert str(sequences) == "[tensor([1, 2, 3]), tensor([4, 5]), tensor([6])]"
    packed_sequences = pack_sequence(sequences)
    assert str(packed_sequences) == (
        "PackedSequence(data=tensor([1, 4, 6, 2, 5, 3]), batch_sizes=tensor([3, 2, 1]), "
        "sorted_indices=None, unsorted_indices=None)"
    )
    unpacked_sequences = unpack_sequence(packed_sequences)
    assert str(unpacked_sequences) == "[tensor([1, 2, 3]), tensor([4, 5]), tensor([6])]"


# ----- pack_padded_sequence and pad_packed_sequence ----------------------------------------------

# (lengths, enforce_sorted): sorted, unsorted, ties, one sequence, all equal, shorter than T
LENGTHS = [
    ([5, 3, 3, 1], True),
    ([3, 5, 1, 4], False),
    ([2, 4, 2, 4, 1, 2], False),
    ([4], True),
    ([5, 5, 5], False),
    ([3, 2, 2], True),
]


@pytest.mark.parametrize("lengths, enforce_sorted", LENGTHS)
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("trailing", [(), (3,), (2, 3)])
def test_pack_padded_sequence_matches_torch(lengths, enforce_sorted, batch_first, trailing):
    steps, batch = 5, len(lengths)
    shape = ((batch, steps) if batch_first else (steps, batch)) + trailing
    ours_x, theirs_x = _pair(np.random.default_rng(1).standard_normal(shape))
    ours = pack_padded_sequence(ours_x, lengths, batch_first, enforce_sorted)
    theirs = tr.pack_padded_sequence(theirs_x, lengths, batch_first, enforce_sorted)
    assert isinstance(ours, PackedSequence)
    _same_packed(ours, theirs)
    _backward(ours.data, theirs.data)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), **GRAD)


def test_pack_padded_sequence_takes_lengths_as_tensors_and_arrays():
    x = np.random.default_rng(2).standard_normal((4, 3, 2))
    expected = tr.pack_padded_sequence(torch.tensor(x), torch.tensor([2, 4, 1]), False, False)
    for lengths in (bai.tensor([2, 4, 1]), np.array([2, 4, 1]), (2, 4, 1), bai.tensor([2.0, 4, 1])):
        _same_packed(pack_padded_sequence(bai.tensor(x), lengths, enforce_sorted=False), expected)


def test_pack_padded_sequence_keeps_dtype_and_integer_data():
    for dtype in ("int64", "int32", "bool", "float32"):
        x = np.arange(12).reshape(4, 3).astype(dtype)
        ours = pack_padded_sequence(bai.tensor(x), [4, 2, 1])
        theirs = tr.pack_padded_sequence(torch.tensor(x), [4, 2, 1])
        _same_packed(ours, theirs)


@pytest.mark.parametrize("lengths, enforce_sorted", LENGTHS)
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_value, total_length", [(0.0, None), (-2.5, 7), (1.0, 5)])
def test_pad_packed_sequence_matches_torch(
    lengths, enforce_sorted, batch_first, padding_value, total_length
):
    x = np.random.default_rng(3).standard_normal((5, len(lengths), 3))
    ours_packed = pack_padded_sequence(bai.tensor(x), lengths, enforce_sorted=enforce_sorted)
    theirs_packed = tr.pack_padded_sequence(torch.tensor(x), lengths, enforce_sorted=enforce_sorted)
    ours_data, theirs_data = _pair(theirs_packed.data.numpy())
    ours_packed = ours_packed._replace(data=ours_data)
    theirs_packed = theirs_packed._replace(data=theirs_data)
    ours, ours_lengths = pad_packed_sequence(ours_packed, batch_first, padding_value, total_length)
    theirs, theirs_lengths = tr.pad_packed_sequence(
        theirs_packed, batch_first, padding_value, total_length
    )
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **TIGHT)
    assert ours_lengths.dtype == "int64"
    np.testing.assert_array_equal(ours_lengths.numpy(), theirs_lengths.numpy())
    _backward(ours, theirs)
    np.testing.assert_allclose(ours_data.grad.numpy(), theirs_data.grad.numpy(), **GRAD)


def test_pad_packed_sequence_casts_padding_to_integer_data():
    packed = pack_padded_sequence(bai.tensor([[1, 2], [3, 0]]), [2, 1])
    theirs = tr.pack_padded_sequence(torch.tensor([[1, 2], [3, 0]]), [2, 1])
    ours, _ = pad_packed_sequence(packed, padding_value=2.7)
    expected, _ = tr.pad_packed_sequence(theirs, padding_value=2.7)
    assert ours.dtype == "int64"
    np.testing.assert_array_equal(ours.numpy(), expected.numpy())


@pytest.mark.parametrize("batch_first", [False, True])
def test_packing_round_trip_gradient(batch_first):
    """pad(pack(x)): the gradient reaches the valid cells only, as in PyTorch."""
    lengths = [2, 5, 3]
    shape = (3, 5, 2) if batch_first else (5, 3, 2)
    ours_x, theirs_x = _pair(np.random.default_rng(4).standard_normal(shape))
    ours, _ = pad_packed_sequence(
        pack_padded_sequence(ours_x, lengths, batch_first, False), batch_first, 9.0
    )
    theirs, _ = tr.pad_packed_sequence(
        tr.pack_padded_sequence(theirs_x, lengths, batch_first, False), batch_first, 9.0
    )
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **TIGHT)
    _backward(ours, theirs)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), **GRAD)


# ----- pad_sequence and unpad_sequence -----------------------------------------------------------


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("trailing", [(), (3,), (2, 2)])
@pytest.mark.parametrize("lengths", [[3, 5, 1], [4], [2, 0, 2], [0, 0]])
def test_pad_sequence_matches_torch(batch_first, padding_side, trailing, lengths):
    rng = np.random.default_rng(5)
    pairs = [_pair(rng.standard_normal((n, *trailing))) for n in lengths]
    ours = pad_sequence([p[0] for p in pairs], batch_first, -1.5, padding_side)
    theirs = tr.pad_sequence([p[1] for p in pairs], batch_first, -1.5, padding_side)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **TIGHT)
    _backward(ours, theirs)
    for (mine, their), n in zip(pairs, lengths):
        if n:
            np.testing.assert_allclose(mine.grad.numpy(), their.grad.numpy(), **GRAD)


def test_pad_sequence_defaults_dtypes_and_tensor_input():
    values = [np.arange(3), np.arange(1)]
    ours = pad_sequence([bai.tensor(v) for v in values])
    theirs = tr.pad_sequence([torch.tensor(v) for v in values])
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # the first sequence's dtype, the padding value cast to it
    ours = pad_sequence([bai.tensor([1, 2]), bai.tensor([0.5])], padding_value=2.7)
    theirs = tr.pad_sequence([torch.tensor([1, 2]), torch.tensor([0.5])], padding_value=2.7)
    assert ours.dtype == "int64"
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    ours = pad_sequence([bai.tensor([0.5]), bai.tensor([1, 2])])
    assert ours.dtype == "float32"
    np.testing.assert_array_equal(
        ours.numpy(), tr.pad_sequence([torch.tensor([0.5]), torch.tensor([1, 2])]).numpy()
    )
    # a tensor is a sequence of its rows
    block = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(
        pad_sequence(bai.tensor(block)).numpy(), tr.pad_sequence(torch.tensor(block)).numpy()
    )
    # any iterable of tensors
    generator = (bai.tensor(v) for v in values)
    np.testing.assert_array_equal(
        pad_sequence(generator, batch_first=True).numpy(), [[0, 1, 2], [0, 0, 0]]
    )


@pytest.mark.parametrize("batch_first", [False, True])
def test_unpad_sequence_matches_torch(batch_first):
    lengths = [3, 5, 1]
    shape = (3, 5, 2) if batch_first else (5, 3, 2)
    ours_x, theirs_x = _pair(np.random.default_rng(6).standard_normal(shape))
    ours = unpad_sequence(ours_x, bai.tensor(lengths), batch_first)
    # PyTorch transposes its argument in place: give it a copy
    theirs = tr.unpad_sequence(theirs_x.clone(), torch.tensor(lengths), batch_first)
    assert len(ours) == len(theirs) == 3
    for k, (mine, their) in enumerate(zip(ours, theirs)):
        assert tuple(mine.shape) == tuple(their.shape)
        np.testing.assert_allclose(mine.numpy(), their.detach().numpy(), **TIGHT)
        _backward(mine, their, seed=k)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), **GRAD)
    # the padded batch is left as it was
    assert tuple(ours_x.shape) == shape


def test_unpad_sequence_clips_lengths_as_torch():
    padded = np.arange(6.0).reshape(3, 2)
    ours = unpad_sequence(bai.tensor(padded), [5, -1])
    theirs = tr.unpad_sequence(torch.tensor(padded), torch.tensor([5, -1]))
    for mine, their in zip(ours, theirs):
        np.testing.assert_array_equal(mine.numpy(), their.numpy())


# ----- pack_sequence and unpack_sequence ---------------------------------------------------------


@pytest.mark.parametrize("lengths, enforce_sorted", [([4, 2, 2, 1], True), ([2, 4, 1, 3], False)])
@pytest.mark.parametrize("trailing", [(), (3,)])
def test_pack_and_unpack_sequence_match_torch(lengths, enforce_sorted, trailing):
    rng = np.random.default_rng(7)
    pairs = [_pair(rng.standard_normal((n, *trailing))) for n in lengths]
    ours = pack_sequence([p[0] for p in pairs], enforce_sorted)
    theirs = tr.pack_sequence([p[1] for p in pairs], enforce_sorted)
    _same_packed(ours, theirs)
    ours_back, theirs_back = unpack_sequence(ours), tr.unpack_sequence(theirs)
    loss_ours, loss_theirs = 0, 0
    rng = np.random.default_rng(8)
    for mine, their in zip(ours_back, theirs_back):
        np.testing.assert_allclose(mine.numpy(), their.detach().numpy(), **TIGHT)
        weight = rng.standard_normal(tuple(their.shape))
        loss_ours = loss_ours + (mine * bai.Tensor(weight)).sum()
        loss_theirs = loss_theirs + (their * torch.tensor(weight)).sum()
    loss_ours = loss_ours + (ours.data * ours.data).sum()
    loss_theirs = loss_theirs + (theirs.data * theirs.data).sum()
    loss_ours.backward()
    loss_theirs.backward()
    for mine, their in pairs:
        np.testing.assert_allclose(mine.grad.numpy(), their.grad.numpy(), **GRAD)


# ----- PackedSequence and invert_permutation -----------------------------------------------------


def test_invert_permutation_matches_torch():
    permutation = np.random.default_rng(9).permutation(7)
    ours = invert_permutation(bai.tensor(permutation))
    assert ours.dtype == "int64"
    np.testing.assert_array_equal(
        ours.numpy(), tr.invert_permutation(torch.tensor(permutation)).numpy()
    )
    assert invert_permutation(None) is None


def test_packed_sequence_construction_and_conversions():
    data = bai.tensor([1.0, 2.0, 3.0])
    packed = PackedSequence(data, bai.tensor([2, 1]), bai.tensor([1, 0]))
    np.testing.assert_array_equal(packed.unsorted_indices.numpy(), [1, 0])
    pair = PackedSequence((data, bai.tensor([2, 1])))
    assert pair.sorted_indices is None and pair.unsorted_indices is None
    data_out, batch_sizes, sorted_indices, unsorted_indices = packed  # a named tuple
    assert data_out is data and isinstance(packed, tuple)
    assert packed.to(bai.float32) is packed and packed.float() is packed
    assert packed.cpu() is packed and packed.to("cpu") is packed
    assert packed.is_cuda is False
    for method, dtype in [
        ("double", "float64"),
        ("half", "float16"),
        ("long", "int64"),
        ("int", "int32"),
        ("short", "int16"),
        ("char", "int8"),
        ("byte", "uint8"),
    ]:
        converted = getattr(packed, method)()
        assert type(converted) is PackedSequence and converted.data.dtype == dtype
        assert converted.batch_sizes is packed.batch_sizes
        np.testing.assert_array_equal(converted.sorted_indices.numpy(), [1, 0])
    moved = packed.to(dtype=bai.float64)
    assert moved.data.dtype == "float64"
    np.testing.assert_array_equal(moved.unsorted_indices.numpy(), [1, 0])
    with pytest.raises(ArgumentError, match=r"\[PackedSequence\]"):
        PackedSequence(data)


# ----- freezing ----------------------------------------------------------------------------------


def test_packing_freezes_with_given_lengths():
    def repad(x):
        packed = pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False)
        return pad_packed_sequence(packed, batch_first=True, padding_value=-1.0)[0] * 2

    def pad_left(x):
        return pad_sequence([x[:3], x[:1], x], batch_first=True, padding_side="left")

    rng = np.random.default_rng(10)
    for fn, shape in [(repad, (4, 3, 2)), (pad_left, (4, 2))]:
        frozen = freeze(fn, [bai.TensorSpec(shape, "float32")])
        new = rng.standard_normal(shape).astype("float32")
        np.testing.assert_allclose(
            np.asarray(frozen(new)), fn(bai.tensor(new)).numpy(), rtol=1e-6, atol=1e-7
        )


def test_packed_lstm_freezes_with_given_lengths():
    lstm = bai.nn.LSTM(2, 3, num_layers=2, bidirectional=True)

    def run(x):
        output, (h, c) = lstm(pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False))
        return pad_packed_sequence(output)[0], h, c

    frozen = freeze(run, [bai.TensorSpec((4, 3, 2), "float32")])
    new = np.random.default_rng(11).standard_normal((4, 3, 2)).astype("float32")
    for mine, eager in zip(frozen(new), run(bai.tensor(new))):
        np.testing.assert_allclose(np.asarray(mine), eager.numpy(), rtol=1e-5, atol=1e-6)


def test_lengths_computed_from_the_inputs_are_refused_when_freezing():
    def data_dependent(x):
        lengths = (x[:, :, 0] > 0).sum(0) + 1
        return pack_padded_sequence(x, lengths, enforce_sorted=False).data

    with pytest.raises(GraphError):
        freeze(data_dependent, [bai.TensorSpec((4, 3, 2), "float32")])


# ----- errors ------------------------------------------------------------------------------------


def test_utility_errors():
    x = bai.zeros(4, 3)
    with pytest.raises(ArgumentError, match=r"\[pack_padded_sequence\].*decreasing"):
        pack_padded_sequence(x, [2, 3, 1])
    with pytest.raises(ArgumentError, match=r"\[pack_padded_sequence\].*between 1 and"):
        pack_padded_sequence(x, [2, 0, 1], enforce_sorted=False)
    with pytest.raises(ArgumentError, match=r"\[pack_padded_sequence\].*between 1 and"):
        pack_padded_sequence(x, [5, 2, 1])  # PyTorch reads past the end here
    with pytest.raises(ShapeError, match=r"\[pack_padded_sequence\].*2 lengths for a batch of 3"):
        pack_padded_sequence(x, [2, 1])
    with pytest.raises(ShapeError, match=r"\[pack_padded_sequence\].*empty"):
        pack_padded_sequence(bai.zeros(0, 3), [1, 1, 1])
    with pytest.raises(ShapeError, match=r"\[pack_padded_sequence\].*at least 2"):
        pack_padded_sequence(bai.zeros(3), [1, 1, 1])
    with pytest.raises(ShapeError, match=r"\[pack_padded_sequence\].*1-D"):
        pack_padded_sequence(x, bai.tensor([[3, 2, 1]]))
    with pytest.raises(ArgumentError, match=r"\[pack_padded_sequence\].*between 1 and"):
        pack_sequence([bai.zeros(2), bai.zeros(0)])
    packed = pack_padded_sequence(x, [3, 2, 1])
    with pytest.raises(ArgumentError, match=r"\[pad_packed_sequence\].*total_length=2"):
        pad_packed_sequence(packed, total_length=2)
    with pytest.raises(ArgumentError, match=r"\[pad_packed_sequence\] expected a PackedSequence"):
        pad_packed_sequence(x)
    with pytest.raises(ShapeError, match=r"\[pad_packed_sequence\] batch_sizes \[1, 2\]"):
        pad_packed_sequence(PackedSequence(bai.zeros(3), bai.tensor([1, 2])))
    with pytest.raises(ShapeError, match=r"\[pad_packed_sequence\] batch_sizes \[2, 2\]"):
        pad_packed_sequence(PackedSequence(bai.zeros(3), bai.tensor([2, 2])))
    with pytest.raises(ArgumentError, match=r"\[pad_sequence\] received an empty list"):
        pad_sequence([])
    with pytest.raises(ArgumentError, match=r"\[pad_sequence\] padding_side"):
        pad_sequence([bai.zeros(2)], padding_side="middle")
    with pytest.raises(ShapeError, match=r"\[pad_sequence\].*sequence 1 is \(1, 2\)"):
        pad_sequence([bai.zeros(2, 3), bai.zeros(1, 2)])
    with pytest.raises(ShapeError, match=r"\[pad_sequence\].*at least 1"):
        pad_sequence([bai.tensor(1.0), bai.zeros(1)])
    with pytest.raises(ArgumentError, match=r"\[pad_sequence\] expected an iterable"):
        pad_sequence(3)
    with pytest.raises(ShapeError, match=r"\[unpad_sequence\].*3 lengths for a batch of 2"):
        unpad_sequence(bai.zeros(3, 2), [1, 2, 3])


# ----- recurrent layers over packed batches ------------------------------------------------------

INPUT, HIDDEN = 3, 4
LAYERS = {"RNN": torch.nn.RNN, "LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU}


def _build(name: str, **kwargs):
    """The same layer in both libraries, float64, PyTorch's weights copied into ours."""
    theirs = LAYERS[name](INPUT, HIDDEN, **kwargs).double()
    ours = getattr(bai.nn, name)(INPUT, HIDDEN, dtype=bai.float64, **kwargs)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _states(value) -> list:
    return list(value) if isinstance(value, tuple) else [value]


def _compare_packed_layer(ours, theirs, lengths, enforce_sorted, batch_first, with_state, seed=0):
    """Pack one padded batch in both libraries, run both layers (with random initial states
    when ``with_state``), compare the packed output, its padded form and the final states, then
    backpropagate one random weighting of all of them and compare the gradients of the padded
    input, the initial states and every parameter."""
    rng = np.random.default_rng(seed)
    steps, batch = max(lengths) + 1, len(lengths)  # one step of padding past the longest
    shape = (batch, steps, INPUT) if batch_first else (steps, batch, INPUT)
    ours_x, theirs_x = _pair(rng.standard_normal(shape))
    ours_in = pack_padded_sequence(ours_x, lengths, batch_first, enforce_sorted)
    theirs_in = tr.pack_padded_sequence(theirs_x, lengths, batch_first, enforce_sorted)
    ours_h0, theirs_h0 = [], []
    if with_state:
        directions = 2 if theirs.bidirectional else 1
        sizes = [theirs.proj_size or HIDDEN] + (
            [HIDDEN] if isinstance(theirs, torch.nn.LSTM) else []
        )
        for size in sizes:
            mine, their = _pair(rng.standard_normal((theirs.num_layers * directions, batch, size)))
            ours_h0.append(mine)
            theirs_h0.append(their)
    lstm = isinstance(theirs, torch.nn.LSTM)
    ours_hx = (tuple(ours_h0) if lstm else ours_h0[0]) if with_state else None
    theirs_hx = (tuple(theirs_h0) if lstm else theirs_h0[0]) if with_state else None
    ours_out, ours_final = ours(ours_in, ours_hx)
    theirs_out, theirs_final = theirs(theirs_in, theirs_hx)
    assert isinstance(ours_out, PackedSequence)
    _same_packed(ours_out, theirs_out)
    ours_padded, _ = pad_packed_sequence(ours_out, batch_first)
    theirs_padded, _ = tr.pad_packed_sequence(theirs_out, batch_first)
    ours_all = [ours_out.data, ours_padded] + _states(ours_final)
    theirs_all = [theirs_out.data, theirs_padded] + _states(theirs_final)
    assert len(ours_all) == len(theirs_all)
    loss_ours, loss_theirs = 0, 0
    for k, (mine, their) in enumerate(zip(ours_all, theirs_all)):
        assert tuple(mine.shape) == tuple(their.shape), k
        np.testing.assert_allclose(mine.numpy(), their.detach().numpy(), **TIGHT, err_msg=str(k))
        weight = rng.standard_normal(tuple(their.shape))
        loss_ours = loss_ours + (mine * bai.Tensor(weight)).sum()
        loss_theirs = loss_theirs + (their * torch.tensor(weight)).sum()
    loss_ours.backward()
    loss_theirs.backward()
    for k, (mine, their) in enumerate(zip([ours_x] + ours_h0, [theirs_x] + theirs_h0)):
        np.testing.assert_allclose(mine.grad.numpy(), their.grad.numpy(), **GRAD, err_msg=str(k))
    theirs_params = dict(theirs.named_parameters())
    for name, param in ours.named_parameters():
        np.testing.assert_allclose(
            param.grad.numpy(), theirs_params[name].grad.numpy(), **GRAD, err_msg=name
        )


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize(
    "lengths, enforce_sorted", [([6, 4, 4, 1], True), ([3, 6, 1, 4, 3], False)]
)
def test_packed_layers_match_torch(
    name, num_layers, bidirectional, batch_first, lengths, enforce_sorted
):
    ours, theirs = _build(
        name, num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first
    )
    _compare_packed_layer(ours, theirs, lengths, enforce_sorted, batch_first, with_state=False)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_layers_with_initial_states_match_torch(name, bidirectional, enforce_sorted):
    ours, theirs = _build(name, num_layers=2, bidirectional=bidirectional)
    lengths = [5, 3, 2, 2] if enforce_sorted else [2, 5, 2, 3]
    _compare_packed_layer(ours, theirs, lengths, enforce_sorted, False, with_state=True, seed=1)


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("RNN", {"nonlinearity": "relu"}),
        ("RNN", {"bias": False, "bidirectional": True}),
        ("GRU", {"bias": False, "num_layers": 2}),
        ("LSTM", {"bias": False, "bidirectional": True}),
        ("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True}),
        ("LSTM", {"dropout": 0.5, "num_layers": 2}),  # compared in eval mode: no dropout
    ],
)
@pytest.mark.parametrize("with_state", [False, True])
def test_packed_layer_variants_match_torch(name, kwargs, with_state):
    ours, theirs = _build(name, **kwargs)
    ours.eval()
    theirs.eval()
    _compare_packed_layer(ours, theirs, [2, 5, 1, 5, 3], False, False, with_state, seed=2)


@pytest.mark.parametrize("lengths", [[4, 4, 4], [1, 1], [1]])
def test_packed_layers_with_equal_lengths_match_torch(lengths):
    ours, theirs = _build("LSTM", num_layers=2, bidirectional=True)
    _compare_packed_layer(ours, theirs, lengths, True, False, with_state=True, seed=3)


def test_packed_input_with_equal_lengths_gives_the_padded_result():
    lstm = bai.nn.GRU(INPUT, HIDDEN, num_layers=2, bidirectional=True, dtype=bai.float64)
    x = bai.Tensor(np.random.default_rng(12).standard_normal((5, 3, INPUT)))
    padded_output, padded_h = lstm(x)
    packed_output, packed_h = lstm(pack_padded_sequence(x, [5, 5, 5]))
    np.testing.assert_allclose(pad_packed_sequence(packed_output)[0].numpy(), padded_output.numpy())
    np.testing.assert_allclose(packed_h.numpy(), padded_h.numpy())


def test_packed_layer_trains_with_dropout():
    lstm = bai.nn.LSTM(INPUT, HIDDEN, num_layers=3, dropout=0.5)
    packed = pack_sequence([bai.randn(n, INPUT) for n in (2, 5, 1)], enforce_sorted=False)
    output, (h, c) = lstm(packed)
    assert tuple(output.data.shape) == (8, HIDDEN) and tuple(h.shape) == (3, 3, HIDDEN)
    (output.data.sum() + h.sum()).backward()
    assert all(p.grad is not None for p in lstm.parameters())


def test_packed_layer_errors():
    lstm = bai.nn.LSTM(INPUT, HIDDEN)
    packed = pack_sequence([bai.randn(3, INPUT), bai.randn(2, INPUT)])
    with pytest.raises(ShapeError, match=r"\[LSTM\] expected packed data \(sum of lengths, 3\)"):
        lstm(pack_sequence([bai.randn(3, 2), bai.randn(2, 2)]))
    with pytest.raises(ShapeError, match=r"\[LSTM\] expected h0 of shape \(1, 2, 4\)"):
        lstm(packed, (bai.zeros(1, 3, HIDDEN), bai.zeros(1, 3, HIDDEN)))
    with pytest.raises(DTypeError, match=r"\[GRU\] expected a floating-point input"):
        bai.nn.GRU(INPUT, HIDDEN)(packed.long())
    with pytest.raises(ShapeError, match=r"\[RNN\] batch_sizes \[1, 2\]"):
        bai.nn.RNN(INPUT, HIDDEN)(PackedSequence(bai.zeros(3, INPUT), bai.tensor([1, 2])))
