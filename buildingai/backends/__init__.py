"""``buildingai.backends``: the switches and questions PyTorch programs address to
``torch.backends`` before choosing a device.

- ``cudnn``: ``benchmark``, ``deterministic``, ``enabled`` and ``allow_tf32`` can be read and set
  as in PyTorch. BuildingAI does not call cuDNN (its convolutions are GEMMs of its own) and picks
  no algorithm by timing, so they change nothing; ``cudnn.is_available()`` is False.
- ``mps``: ``is_available()`` and ``is_built()`` are False: BuildingAI runs on the CPU and on
  NVIDIA GPUs through CuPy, not on Apple's Metal.
- ``cuda``: ``is_built()`` (CuPy installed) and ``matmul.allow_tf32``, a flag that, like
  ``cudnn.allow_tf32``, is kept and changes nothing: TF32 products are asked for with
  ``buildingai.set_math_precision("tf32")``, which says what it does on each device.
- ``mkldnn``, ``openmp``: ``is_available()`` False; BuildingAI's CPU kernels are NumPy's and its
  own (see ``buildingai info``).
"""

from . import cuda, cudnn, mkldnn, mps, openmp

__all__ = ["cuda", "cudnn", "mkldnn", "mps", "openmp"]
