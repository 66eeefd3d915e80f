"""``torch.backends.mps``: Apple's Metal is not a BuildingAI device."""


def is_available() -> bool:
    """False: BuildingAI runs on the CPU and on NVIDIA GPUs (CuPy), not on Metal."""
    return False


def is_built() -> bool:
    """False: BuildingAI has no Metal backend."""
    return False
