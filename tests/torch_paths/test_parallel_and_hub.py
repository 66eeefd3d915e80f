"""``nn.DataParallel`` on one device and ``hub.load_state_dict_from_url`` from a file or the
cache, as PyTorch's behave there."""

import os

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn

torch = pytest.importorskip("torch")


def test_data_parallel_without_a_gpu_calls_the_module_and_prefixes_state_dict_keys():
    inner = nn.Linear(3, 2)
    wrapped = nn.DataParallel(inner)
    theirs = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    assert (
        list(wrapped.state_dict()) == list(theirs.state_dict()) == ["module.weight", "module.bias"]
    )
    x = bai.ones(4, 3)
    np.testing.assert_array_equal(wrapped(x).numpy(), inner(x).numpy())
    assert wrapped.module is inner
    assert [p is q for p, q in zip(wrapped.parameters(), inner.parameters())] == [True, True]
    out = bai.nn.parallel.data_parallel(inner, x, device_ids=[])
    np.testing.assert_array_equal(out.numpy(), inner(x).numpy())


def test_data_parallel_over_several_devices_and_ddp_say_what_to_do():
    with pytest.raises(bai.BuildingAIError, match=r"\[DataParallel\] copying the model to 2"):
        nn.DataParallel(nn.Linear(3, 2), device_ids=[0, 1])
    from buildingai.nn.parallel import DistributedDataParallel

    with pytest.raises(bai.BuildingAIError, match="buildingai launch"):
        DistributedDataParallel(nn.Linear(3, 2))


@pytest.fixture
def weights(tmp_path):
    model = nn.Linear(3, 2)
    path = tmp_path / "linear-0123.safetensors"
    bai.save(model.state_dict(), path)
    return model, path


def test_load_state_dict_from_a_local_path_or_file_url(weights):
    model, path = weights
    for url in (str(path), path.as_uri()):
        state = bai.hub.load_state_dict_from_url(url, map_location="cpu")
        assert list(state) == ["weight", "bias"]
        np.testing.assert_array_equal(state["weight"].numpy(), model.weight.numpy())


def test_load_state_dict_from_url_reads_the_cache_without_a_network(weights, tmp_path, monkeypatch):
    model, path = weights
    url = "https://example.invalid/models/linear-0123.safetensors"
    cache = tmp_path / "models"
    cache.mkdir()
    os.replace(path, cache / "linear-0123.safetensors")
    state = bai.hub.load_state_dict_from_url(url, model_dir=cache)
    fresh = nn.Linear(3, 2)
    fresh.load_state_dict(state)
    np.testing.assert_array_equal(fresh.weight.numpy(), model.weight.numpy())
    monkeypatch.setattr(bai.hub, "_hub_dir", None)  # set_dir below lasts for this test only
    bai.hub.set_dir(tmp_path / "hub")
    assert bai.hub.get_dir() == str(tmp_path / "hub")
    os.makedirs(tmp_path / "hub" / "checkpoints")
    os.replace(cache / "linear-0123.safetensors", tmp_path / "hub/checkpoints/w.safetensors")
    state = bai.hub.load_state_dict_from_url(url, file_name="w.safetensors")
    assert list(state) == ["weight", "bias"]


def test_offline_download_is_one_line_naming_the_url(tmp_path):
    url = "https://example.invalid/models/resnet18-f37072fd.pth"
    with pytest.raises(bai.CheckpointError) as caught:
        bai.hub.load_state_dict_from_url(url, model_dir=tmp_path)
    message = caught.value.message
    assert "\n" not in message and url in message
    assert str(tmp_path / "resnet18-f37072fd.pth") in caught.value.help
    assert not os.listdir(tmp_path)  # nothing half-written


def test_a_pickled_pytorch_file_is_refused_with_how_to_convert_it(tmp_path):
    path = tmp_path / "model.pth"
    torch.save(torch.nn.Linear(3, 2).state_dict(), path)
    with pytest.raises(bai.CheckpointError, match="pickle"):
        bai.hub.load_state_dict_from_url(str(path))


def test_a_missing_local_file_names_it(tmp_path):
    with pytest.raises(bai.CheckpointError, match=r"\[hub\] no file at"):
        bai.hub.load_state_dict_from_url(str(tmp_path / "absent.safetensors"))
