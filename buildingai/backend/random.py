"""Random number generation: explicit ``Generator`` objects and one default generator that
``manual_seed`` reseeds. A generator's state is a plain JSON-serialisable dict, so it can be saved
in a checkpoint and restored bit-exactly."""

from __future__ import annotations

import numpy as np

from .device import CPU, Device, cupy_module


class Generator:
    """A seeded stream of random numbers for one device.

    ``Generator(seed=0)`` draws with NumPy's PCG64 on the CPU; ``device="cuda"`` draws on the GPU
    with CuPy's generator. Pass it to ``rand``, ``randn``, ``dropout``, samplers... to make
    randomness explicit and reproducible.
    """

    def __init__(self, seed: int | None = None, device: str | Device = "cpu") -> None:
        self.device = Device(device)
        self.manual_seed(seed)

    def manual_seed(self, seed: int | None) -> Generator:
        """Restart the stream from ``seed`` (fresh OS entropy when None)."""
        self.initial_seed = (
            seed if seed is not None else int(np.random.SeedSequence().entropy % 2**63)
        )
        self._numpy = np.random.Generator(np.random.PCG64(self.initial_seed))
        self._cupy = None
        if self.device.type == "cuda":
            cupy = cupy_module()
            with cupy.cuda.Device(self.device.index):
                self._cupy = cupy.random.Generator(cupy.random.XORWOW(self.initial_seed))
        return self

    def backend_generator(self, device: Device = CPU):
        """The NumPy (or CuPy) generator that draws arrays for ``device``."""
        if device.type == "cuda":
            if self._cupy is None:
                cupy = cupy_module()
                self._cupy = cupy.random.Generator(cupy.random.XORWOW(self.initial_seed))
            return self._cupy
        return self._numpy

    def manual_seed_cuda(self, seed: int) -> Generator:
        """Restart only the GPU stream from ``seed`` (``buildingai.cuda.manual_seed``); the CPU
        stream goes on where it was."""
        cupy = cupy_module()
        with cupy.cuda.Device(self.device.index or 0):
            self._cupy = cupy.random.Generator(cupy.random.XORWOW(seed))
        return self

    def get_state(self) -> dict:
        """The generator state as a JSON-serialisable dict (CPU stream)."""
        state = self._numpy.bit_generator.state
        return {
            "bit_generator": state["bit_generator"],
            "state": {k: int(v) for k, v in state["state"].items()},
            "has_uint32": int(state["has_uint32"]),
            "uinteger": int(state["uinteger"]),
            "initial_seed": int(self.initial_seed),
        }

    def set_state(self, state: dict) -> None:
        """Restore a state returned by ``get_state``."""
        self.initial_seed = state["initial_seed"]
        self._numpy.bit_generator.state = {
            "bit_generator": state["bit_generator"],
            "state": dict(state["state"]),
            "has_uint32": state["has_uint32"],
            "uinteger": state["uinteger"],
        }

    def __repr__(self) -> str:
        return f"Generator(seed={self.initial_seed}, device='{self.device}')"


default_generator = Generator(seed=0)


def manual_seed(seed: int) -> Generator:
    """Reseed the default generator (and NumPy's legacy global one, for user code that uses it)."""
    np.random.seed(seed % 2**32)
    return default_generator.manual_seed(seed)


def resolve_generator(generator: Generator | None) -> Generator:
    return default_generator if generator is None else generator


# ----- capturing every random stream a training run draws from -------------------------------
# A resumed run is bit-identical only if every stream it draws from resumes where it stopped:
# BuildingAI's default generator, NumPy's legacy global generator (np.random.rand & co, which
# user code and libraries still call) and Python's `random` module.


def get_rng_state() -> dict:
    """The state of the default generator, NumPy's global generator and Python's ``random``.

    Returns a dict of plain values (ints, floats, strings, None) and uint32 NumPy arrays, which
    ``buildingai.save`` writes exactly (128-bit PCG64 integers included)::

        {"buildingai": default_generator.get_state(),
         "numpy": {"bit_generator": "MT19937", "key": uint32 (624,), "pos": int,
                   "has_gauss": int, "cached_gaussian": float},
         "python": {"version": int, "internal_state": uint32 (625,), "gauss_next": float | None}}

    Explicit ``Generator`` objects are not included: save their own ``get_state()``.
    """
    import random

    algorithm, key, pos, has_gauss, cached_gaussian = np.random.get_state(legacy=True)
    version, internal_state, gauss_next = random.getstate()
    return {
        "buildingai": default_generator.get_state(),
        "numpy": {
            "bit_generator": str(algorithm),
            "key": np.array(key, dtype=np.uint32),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached_gaussian),
        },
        "python": {
            "version": int(version),
            # 624 Mersenne Twister words and the position, each below 2**32
            "internal_state": np.array(internal_state, dtype=np.uint32),
            "gauss_next": gauss_next,
        },
    }


def set_rng_state(state: dict) -> None:
    """Restore every stream captured by ``get_rng_state`` (also after a save/load round trip)."""
    import random

    from ..errors import BuildingAIError

    missing = [part for part in ("buildingai", "numpy", "python") if part not in state]
    if missing:
        raise BuildingAIError(
            f"set_rng_state needs the parts 'buildingai', 'numpy' and 'python'; missing {missing}",
            help="pass the dict returned by get_rng_state() unchanged",
        )
    default_generator.set_state(state["buildingai"])
    legacy = state["numpy"]
    np.random.set_state(
        (
            legacy["bit_generator"],
            np.asarray(legacy["key"], dtype=np.uint32),
            int(legacy["pos"]),
            int(legacy["has_gauss"]),
            float(legacy["cached_gaussian"]),
        )
    )
    python = state["python"]
    internal = tuple(np.asarray(python["internal_state"], dtype=np.uint64).tolist())
    random.setstate((int(python["version"]), internal, python["gauss_next"]))
