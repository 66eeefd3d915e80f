"""PyTorch's module paths under ``buildingai``: each name is the same object as BuildingAI's own,
and each question a program asks before choosing a device has PyTorch's answer on this machine."""

import importlib

import pytest

import buildingai as bai
import buildingai.data
import buildingai.optim.schedulers

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "name",
    ["Dataset", "DataLoader", "TensorDataset", "Subset", "ConcatDataset", "IterableDataset",
     "random_split", "Sampler", "RandomSampler", "SequentialSampler", "SubsetRandomSampler",
     "WeightedRandomSampler", "BatchSampler", "default_collate", "get_worker_info"],
)  # fmt: skip
def test_utils_data_re_exports_buildingai_data(name):
    from buildingai.utils import data

    assert getattr(data, name) is getattr(buildingai.data, name)
    assert hasattr(torch.utils.data, name)


@pytest.mark.parametrize(
    ("submodule", "name"),
    [("dataset", "Dataset"), ("dataset", "random_split"), ("sampler", "SubsetRandomSampler"),
     ("dataloader", "default_collate"), ("distributed", "DistributedSampler")],
)  # fmt: skip
def test_utils_data_submodules_as_pytorch_spells_them(submodule, name):
    ours = importlib.import_module(f"buildingai.utils.data.{submodule}")
    theirs = importlib.import_module(f"torch.utils.data.{submodule}")
    assert getattr(ours, name) is getattr(bai.utils.data, name)
    assert hasattr(theirs, name)


def test_paths_are_reachable_after_a_plain_import():
    for path in ["utils.data.DataLoader", "optim.lr_scheduler.StepLR", "cuda.is_available",
                 "cuda.amp.GradScaler", "backends.cudnn.benchmark", "backends.mps.is_available",
                 "nn.parallel.DataParallel", "nn.DataParallel", "hub.load_state_dict_from_url",
                 "device", "inference_mode"]:  # fmt: skip
        ours, theirs = bai, torch
        for part in path.split("."):
            ours, theirs = getattr(ours, part), getattr(theirs, part)


def test_lr_scheduler_re_exports_the_schedulers():
    from buildingai.optim import lr_scheduler

    for name in lr_scheduler.__all__:
        assert getattr(lr_scheduler, name) is getattr(buildingai.optim, name)
        assert hasattr(torch.optim.lr_scheduler, name) or name == "WarmupLR"
    assert lr_scheduler._LRScheduler is lr_scheduler.LRScheduler  # older programs subclass it


def test_device_is_pytorchs_spelling_of_device():
    chosen = bai.device("cuda" if bai.cuda.is_available() else "cpu")
    assert chosen == bai.Device("cuda" if bai.cuda_is_available() else "cpu")
    assert bai.device("cuda", 1) == bai.Device("cuda:1")
    assert bai.zeros(2).to(chosen).device == chosen


def test_distributed_sampler_is_reached_on_first_use():
    from buildingai.distributed import DistributedSampler
    from buildingai.utils.data import DistributedSampler as from_utils_data

    assert from_utils_data is DistributedSampler is bai.utils.data.DistributedSampler
    with pytest.raises(AttributeError, match="buildingai.utils.data' has no attribute 'Nothing'"):
        bai.utils.data.Nothing  # noqa: B018
