"""``torch.backends.cudnn``'s flags, readable and settable; BuildingAI does not use cuDNN, so
they change nothing (see ``buildingai.backends``)."""

enabled = True
benchmark = False  # no algorithm is chosen by timing: every run takes the same path
deterministic = False
allow_tf32 = True  # PyTorch's default for convolutions; TF32 here is set_math_precision("tf32")


def is_available() -> bool:
    """False: BuildingAI's convolutions are its own GEMMs, on NumPy or CuPy, not cuDNN's."""
    return False


def version() -> None:
    """None, as PyTorch answers when cuDNN is not available."""
    return None
