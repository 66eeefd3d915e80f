"""``torch.backends.openmp``: BuildingAI's thread pools are its own (``set_num_threads``)."""


def is_available() -> bool:
    """False: BuildingAI does not use OpenMP; ``buildingai.set_num_threads`` sets its threads."""
    return False
