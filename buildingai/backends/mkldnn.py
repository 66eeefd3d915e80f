"""``torch.backends.mkldnn``: oneDNN is not used by BuildingAI."""


def is_available() -> bool:
    """False: BuildingAI's CPU kernels are NumPy's and its own (``buildingai info`` lists them)."""
    return False
