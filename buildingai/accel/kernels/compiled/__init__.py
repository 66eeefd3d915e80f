"""The compiled kernel tier: one-pass numba loops for the hottest element-wise and row-wise
kernels, each the twin of a NumPy kernel that stays the reference.

A NumPy kernel is a few ufunc passes over memory on one thread (``split.py`` cuts large ones
across the thread pool); its compiled twin reads each input once, writes each output once and
runs on numba's threads (``docs/design_notes/performance.md`` has the measurements). The op
records never call a twin themselves: they call ``split.elementwise``, ``split.split_rows`` or
:func:`call` with their NumPy kernel, and those hand the work to the twin when :func:`run`
accepts it.

A NumPy kernel names its twin with ``@compiled_twin("module.function", params=(...))``: the
function lives in ``buildingai.accel.kernels.compiled.<module>`` and takes the same arrays in the
same order (flat 1-D views for element-wise kernels, (rows, n) for row kernels), then the keyword
arguments listed in ``params`` (bound with ``functools.partial`` on the NumPy side) positionally.
Twins take float32 arrays (and integer index arrays) of at least ``MIN_WORK`` elements in all;
everything else (float64, CuPy, strided or small arrays) runs the NumPy kernel, so float64
results are the reference computation itself.

The tier is part of acceleration: it runs only while ``buildingai.accel`` is enabled, which
imports numba and starts its threads (``registry.on_enable``); with acceleration off nothing
here imports numba and the NumPy kernels run. Where numba is missing (``pip install
buildingai[fast]`` brings it), the tier is switched off on its own (``set_enabled(False)`` or
``BUILDINGAI_COMPILED_KERNELS=0`` before import), or in a child process forked after numba's
threads started (GNU OpenMP's pool does not survive ``fork``), the NumPy kernels run. A twin
that fails to load, compile or run is dropped with one warning, and its NumPy kernel runs from
then on. ``status()`` says which; ``buildingai info`` and the Trainer's run record show it.

Float32 CuPy arrays take the CUDA twins of ``compiled/cuda.py`` (fused element-wise kernels of
the same names) and ``compiled/cuda_rows.py`` (row kernels as fused reductions and maps) through
:func:`run_gpu`, where one exists.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import math
import os
import threading
import warnings
from pathlib import Path

import numpy as np

from ....backend.switches import env_switch
from ....backend.threads import blas_spinning, get_num_threads, inside_pool
from ... import registry

_FLOAT32 = np.dtype(np.float32)
ENV_VAR = "BUILDINGAI_COMPILED_KERNELS"
# Below this many elements touched (all arrays of a call together), a kernel runs on one thread:
# waking numba's threads costs more than the split saves (a twin may say otherwise:
# ``compiled_twin``'s ``parallel_from``).
MIN_PARALLEL_WORK = 1 << 16
# Below this many, the NumPy kernel runs: numba's dispatch costs more than the passes it saves.
MIN_WORK = 1 << 14
# ``min_work`` of a twin whose NumPy kernel makes several passes, or several NumPy calls per row:
# the twin's one call is faster from the smallest call on (benchmarks/small_ops.py)
ANY_SIZE = 1
SPIN_COUNT = 3000  # rounds an idle numba thread spins before it sleeps (see _start_threads)
# numba's threading layers, first choice first: OpenMP, whose short spin the kernels are tuned
# for, ahead of numba's own order (TBB first), which the ``mkl`` wheel's TBB would otherwise win
LAYER_PRIORITY = ("omp", "tbb", "workqueue")

TWINS = registry.register_switch(
    "compiled.twins",
    requires=("numba",),
    description="one-pass numba loops for the hottest element-wise and row-wise kernels, each "
    "the twin of a NumPy kernel that stays the reference",
)
TWINS.switched_on = env_switch(ENV_VAR, default=True)
_state = {"numba": None, "error": None}
_twins: dict = {}  # "module.function" -> the compiled function, once loaded


class _LaunchingThread(threading.local):
    """The numba thread count last set from this thread (None: not yet)."""

    count = None  # the class's value on threads that never set it: no raised lookup to read it


_threads = _LaunchingThread()
_starting = threading.Lock()
REGISTRY: dict = {}  # NumPy kernel -> (twin name, params), for tests and ``status``
_ABSENT = np.empty(0, np.float32)  # what a twin receives for an optional array given as None
_BROKEN = object()  # in _twins: this twin failed once, its NumPy kernel runs from then on
_failures: list = []  # why, for ``status``
_gpu_failures: set = set()  # CUDA twins that failed once


def compiled_twin(
    name: str,
    params: tuple = (),
    min_work: int | None = None,
    strided: bool = False,
    parallel_from: int | None = None,
    threads_only: bool = False,
):
    """Mark a NumPy kernel as having the compiled twin ``name`` ("module.function"), which takes
    the kernel's arrays and then the keyword arguments ``params`` positionally; ``min_work``:
    the twin takes calls from this many elements on, where fewer than ``MIN_WORK`` already pay
    (a reference of many small passes); ``strided``: the twin reads arrays through their
    strides, so it takes any whose last axis is contiguous, not only C-contiguous ones;
    ``parallel_from``: the twin splits across threads from this many elements touched, not
    ``MIN_PARALLEL_WORK``; ``threads_only``: the twin takes only calls it runs on more than one
    thread (one NumPy call of the kernel is faster on one: a ufunc with its own vector loop)."""

    def mark(kernel):
        kernel.compiled_twin = (name, tuple(params))
        # every field set: a missing attribute costs a raised error on each twin call
        kernel.compiled_min_work = MIN_WORK if min_work is None else min_work
        kernel.compiled_strided = strided
        kernel.compiled_parallel_from = parallel_from
        kernel.compiled_threads_only = threads_only
        REGISTRY[kernel] = kernel.compiled_twin
        return kernel

    return mark


def set_enabled(enabled: bool) -> bool:
    """Run twins where they apply while acceleration is enabled (True, the default unless
    ``BUILDINGAI_COMPILED_KERNELS=0``) or the NumPy kernels only (False: for comparisons and
    debugging), process-wide. Returns the previous setting."""
    return registry.set_enabled(TWINS.name, enabled)


def _on() -> bool:
    """Whether twins may run: acceleration is enabled and the tier is switched on (numba is
    not imported to answer)."""
    return TWINS.switched_on and registry.is_enabled()


def available() -> bool:
    """Whether twins run: acceleration is enabled, the tier is switched on and numba imports."""
    return _on() and _numba() is not None


def vector_lanes() -> int | None:
    """float32 lanes of the register tiles' vectors on this CPU (8: AVX2, 16: AVX-512), or None
    where twins do not run (``tile_ir`` needs numba, imported only then)."""
    if not available():
        return None
    lanes = _state.get("lanes")
    if lanes is None:  # asked on every convolution's fit test: the import runs once
        from .tile_ir import LANES

        lanes = _state["lanes"] = LANES
    return lanes


def status() -> dict:
    """``{"active", "detail", "switch"}``, as the other accelerations report themselves."""
    switch = f"buildingai.accel.kernels.compiled.set_enabled(bool) or {ENV_VAR}=0/1"
    if not registry.is_enabled():
        enable = f"buildingai.accel.enable() or {registry.ENV_VAR}=1"
        detail = f"acceleration off ({enable}): NumPy kernels run"
    elif not TWINS.switched_on:
        detail = "switched off: NumPy kernels run"
    elif _numba() is None:
        detail = f"numba not importable ({_state['error']}): NumPy kernels run; pip install numba"
    else:
        numba = _state["numba"]
        detail = (
            f"numba {numba.__version__} on the {threading_layer()} threading layer, "
            f"{len(REGISTRY)} kernels with twins"
        )
        if _failures:
            detail += f"; not in use: {'; '.join(_failures)}"
    return {"active": available(), "detail": detail, "switch": switch}


def threading_layer() -> str | None:
    """The threading layer numba's threads run on ("omp", "tbb" or "workqueue"), or None where
    twins do not run (see ``LAYER_PRIORITY``)."""
    if not available():
        return None
    try:
        return _state["numba"].threading_layer()
    except ValueError:  # threads not launched: _start_threads failed
        return None


def run(kernel, arrays, keywords=None, work: int | None = None) -> bool:
    """Run ``kernel``'s compiled twin on ``arrays`` (NumPy arrays, already flat or (rows, n);
    None for an absent optional array) and return True; return False, having done nothing,
    when the twin does not apply. The twin's parameters come from ``keywords``, or from the
    keywords ``kernel`` binds when it is a ``functools.partial``. Its threads are chosen for
    the elements its arrays hold, or for ``work`` where the caller counts what the twin costs
    better (a convolution's multiply-adds: many per element)."""
    fit = _fit(kernel, arrays)
    if fit is None:
        return False
    name, params, twin, arrays, elements = fit
    marked = kernel
    if type(kernel) is functools.partial:
        marked = kernel.func
        if params:  # its keywords are the params
            keywords = kernel.keywords
    work = elements if work is None else work
    if marked.compiled_threads_only and thread_count(work, marked.compiled_parallel_from) == 1:
        return False
    _use_threads(work, marked.compiled_parallel_from)
    try:
        if params:
            twin(*arrays, *[keywords[param] for param in params])
        else:  # the commonest twin: arrays only
            twin(*arrays)
    except Exception as error:  # a compile or cache failure: the NumPy kernel still works
        _give_up(name, error)
        return False
    return True


def min_work(kernel) -> int:
    """The fewest elements touched (all arrays together) from which ``kernel``'s twin takes a
    call, as ``_fit`` decides it; ``MIN_WORK`` for a kernel without a twin."""
    marked = kernel.func if type(kernel) is functools.partial else kernel
    return min(MIN_WORK, getattr(marked, "compiled_min_work", MIN_WORK))


def takes(kernel, arrays) -> bool:
    """Whether :func:`run` would hand ``arrays`` to ``kernel``'s twin."""
    return _fit(kernel, arrays) is not None


def _fit(kernel, arrays):
    """(twin name, parameter names, twin, arrays with absent ones filled in, elements touched)
    when ``kernel``'s twin takes ``arrays``, else None."""
    marked = kernel.func if type(kernel) is functools.partial else kernel
    spec = getattr(marked, "compiled_twin", None)
    if spec is None or not _on():
        return None
    for array in arrays:  # a loop, not any(): a generator costs more on every twin call
        if array is None:
            arrays = [_ABSENT if entry is None else entry for entry in arrays]
            break
    strided = marked.compiled_strided  # (set with compiled_twin)
    work = 0
    for array in arrays:
        dtype = array.dtype  # (``is`` against the one float32 dtype: ``!=`` converts each time)
        if dtype is not _FLOAT32 and dtype.kind not in "iub":
            return None  # (indices pass)
        if not array.flags.c_contiguous and not (strided and _rows_contiguous(array)):
            return None
        work += array.size
    if work < MIN_WORK and work < marked.compiled_min_work:
        return None
    twin = _twin(spec[0])
    return None if twin is None else (spec[0], spec[1], twin, arrays, work)


def _rows_contiguous(array) -> bool:
    """Whether ``array``'s last axis is contiguous and its other steps whole elements forward
    (what a strided twin reads)."""
    size = array.itemsize
    if array.ndim == 0 or any(step < 0 or step % size for step in array.strides):
        return False
    return array.shape[-1] <= 1 or array.strides[-1] == size


def run_gpu(kernel, arrays, keywords=None) -> bool:
    """Run ``kernel``'s CUDA twin (``compiled/cuda.py``, or the row plans of ``cuda_rows.py``)
    on float32 CuPy ``arrays`` and return True; False, having done nothing, where it has none or
    the arrays do not fit."""
    marked = kernel.func if type(kernel) is functools.partial else kernel
    spec = getattr(marked, "compiled_twin", None)
    if spec is None or not _on() or spec[0] in _gpu_failures:
        return False
    present = [array for array in arrays if array is not None]
    if any(array.dtype != np.float32 for array in present):
        return False
    from . import cuda, cuda_rows

    try:
        if spec[0] in cuda_rows.TWINS:  # a plan of row reductions and maps
            if type(kernel) is functools.partial:  # its keywords are the parameters
                keywords = kernel.keywords
            cuda_rows.run(spec[0], arrays, keywords or {})
            return True
        twin = cuda.twin(spec[0])
        if twin is None:
            return False
        if spec[0] == "optim.adam":
            if arrays[4] is not None:  # AMSGrad's maximum: the array operations run it
                return False
            cuda.run_adam(twin, *arrays[:4], **keywords)
        else:
            twin(*arrays)
    except Exception as error:  # NVRTC or launch failure: the CuPy array operations still work
        _give_up(spec[0], error, cuda=True)
        return False
    return True


def has_gpu_twin(kernel) -> bool:
    """Whether ``kernel`` has a CUDA twin (without building it)."""
    from . import cuda, cuda_rows

    spec = getattr(kernel, "compiled_twin", None)
    known = spec is not None and (spec[0] in cuda.SOURCES or spec[0] in cuda_rows.TWINS)
    return known and spec[0] not in _gpu_failures


def split_product(
    a,
    b,
    out,
    work: int,
    by_columns: bool = False,
    cut: bool = True,
    accumulate: bool = False,
    bias=None,
) -> bool:
    """out = a @ b for (entries, m, k) and (entries, k, n) NumPy arrays, or stacks of two batch
    axes, through ``compiled/gemm.py``'s BLAS: with ``cut``, one single-threaded call per block
    on numba's threads (blocks of rows, of columns with ``by_columns``, or whole entries when
    there are enough of them); without, one call per entry on the calling thread. ``work`` is
    the multiply-adds; with ``accumulate``, out += a @ b; with a ``bias`` row, out = a @ b +
    bias (``gemm.product``). False, having done nothing, where the call does not fit or, with
    ``cut``, on one thread."""
    threads = thread_count(work) if cut else 1
    if not _on() or (cut and threads < 2):
        return False
    twin = _twin("gemm.product")
    if twin is None:
        return False
    parts = 0
    if cut:
        _set_threads(threads)
        entries = math.prod(a.shape[:-2])  # (Python ints: no array made for a product's count)
        parts = 1 if entries >= 2 * threads else threads
    try:
        return twin(a, b, out, parts, by_columns, accumulate, bias)
    except Exception as error:  # a compile or cache failure: the Python threads still work
        _give_up("gemm.product", error)
        return False


def matrix_vector(a, b, out, cut: bool = False) -> bool:
    """out = a @ b where a has one row or b one column, as one ``gemv`` of BuildingAI's own
    BLAS (``compiled/gemm.py``), or with ``cut`` one per block of the matrix's rows on as many
    of numba's threads as ``thread_count`` gives; False, having done nothing, where it does not
    apply."""
    twin = _twin("gemm.matrix_vector") if _on() else None
    if twin is None:
        return False
    work = a.size + b.size
    parts = thread_count(work) if cut else 1
    if parts > 1:
        _use_threads(work)
    try:
        return twin(a, b, out, parts)
    except Exception as error:  # a compile or cache failure: NumPy's product still works
        _give_up("gemm.matrix_vector", error)
        return False


def own_blas_ready() -> bool:
    """Whether products run on acceleration's own BLAS (``accel/own_blas.py``) from numba's
    threads: acceleration is enabled, the tier is on, numba imports, and :func:`use_own_blas`
    was given the library (``accel/products.py`` does when acceleration is enabled)."""
    if not available() or _twin("gemm.product") is None:
        return False
    from . import gemm

    return gemm.OWN_BLAS


def use_own_blas(library) -> bool:
    """Have the compiled products call ``library`` (an ``own_blas.Library``), or NumPy's BLAS
    where it is None; returns :func:`own_blas_ready`."""
    if not available() or _twin("gemm.product") is None:
        return False
    from . import gemm

    return gemm.use(library)


def call(xp, kernel, arrays, **params) -> None:
    """``kernel(xp, *arrays, **params)``, through its twin where :func:`run` accepts it."""
    if xp is not np or not run(kernel, arrays, params):
        kernel(xp, *arrays, **params)


def twin_of(kernel):
    """The compiled function ``kernel`` names (loaded, so compiled on first call), or None
    (also while acceleration is off)."""
    spec = getattr(kernel, "compiled_twin", None)
    return None if spec is None or not _on() else _twin(spec[0])


def _twin(name: str):
    twin = _twins.get(name)
    if twin is _BROKEN:
        return None
    if twin is None:
        if _numba() is None:
            return None
        module, function = name.rsplit(".", 1)
        try:
            twin = getattr(importlib.import_module(f"{__name__}.{module}"), function)
        except Exception as error:
            _give_up(name, error)
            return None
        _twins[name] = twin
    return twin


def _give_up(name: str, error: Exception, cuda: bool = False) -> None:
    """Stop using a twin (its CUDA twin with ``cuda``) that failed to load, compile or run, and
    say so once: its NumPy kernel takes over, with the same results to float32 round-off."""
    if cuda:
        _gpu_failures.add(name)
        name += " (CUDA)"
    else:
        _twins[name] = _BROKEN
    failure = f"twin {name} failed: {type(error).__name__}: {error}"
    _failures.append(failure)
    warnings.warn(
        f"{failure}; its NumPy kernel runs instead (set {ENV_VAR}=0 to use only NumPy kernels)",
        RuntimeWarning,
        stacklevel=3,
    )


def _numba():
    """The numba module, imported once; None where it is missing or broken."""
    if _state["numba"] is None and _state["error"] is None:
        with _starting:  # one thread imports and starts the pool (the environment is shared)
            if _state["numba"] is None and _state["error"] is None:
                try:
                    _full_width_vectors()
                    import numba

                    drop_stale_cache()
                    _start_threads(numba)
                except Exception as error:  # missing, built against another NumPy, no threads
                    _state["error"] = f"{type(error).__name__}: {error}"
                else:
                    _state["numba"] = numba
    return _state["numba"]


def _full_width_vectors() -> None:
    """On a CPU with AVX-512, have LLVM fill 16-lane vectors in the twins' loops, unless the
    user chose numba's CPU (``NUMBA_CPU_NAME``, ``NUMBA_CPU_FEATURES``). LLVM's tuning for
    these CPUs prefers 8-lane vectors (``prefer-256-bit``); a float32 tanh then ran 1.3x
    slower than NumPy's own 16-lane loop (docs/design_notes/performance.md). numba reads the
    variable when it is imported, and again when the environment changes, so it stays set."""
    if "NUMBA_CPU_FEATURES" in os.environ or "NUMBA_CPU_NAME" in os.environ:
        return
    from llvmlite import binding

    features = binding.get_host_cpu_features()
    if features.get("avx512f"):
        os.environ["NUMBA_CPU_FEATURES"] = f"{features.flatten()},-prefer-256-bit"


def drop_stale_cache(folder: Path = Path(__file__).parent) -> None:
    """Clear numba's cached machine code of this package when any of its source files changed.

    numba keys a cached kernel on its own file alone, so an edit to a helper it inlines from
    another file (``expf.py``) would leave the old code in use. A digest of every source file,
    kept beside the cache, catches that. A read-only install has nothing to clear (numba then
    caches in the user's folder, and installed files do not change in place)."""
    digest = hashlib.sha256()
    for source in sorted(folder.glob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    cache = folder / "__pycache__"
    stamp = cache / "sources.sha256"
    try:
        if stamp.read_text() == digest.hexdigest():
            return
    except OSError:
        pass
    try:
        for entry in cache.glob("*.nb[ic]"):
            entry.unlink()
        cache.mkdir(exist_ok=True)
        stamp.write_text(digest.hexdigest())
    except OSError:
        pass


def _start_threads(numba) -> None:
    """Start numba's thread pool on OpenMP with a short spin, unless the user chose the
    threading layer (``NUMBA_THREADING_LAYER``, ``NUMBA_THREADING_LAYER_PRIORITY``), the wait
    policy or the spin count.

    numba takes TBB first where it is installed (the ``mkl`` wheel brings it). TBB's idle
    workers go to sleep within a millisecond, so most parallel loops of a training step paid a
    wake-up: the GPT step ran 8% slower at two threads than on OpenMP. ``LAYER_PRIORITY``
    puts OpenMP first; TBB, then the workqueue, stand in where numba has no OpenMP layer.

    By default an idle OpenMP thread spins on its core for about 300,000 rounds after a parallel
    loop, as OpenBLAS's threads do after a GEMM; a loop followed by a GEMM then finds the other
    core busy, and each waits for the other's spin. Sleeping at once (the passive policy) costs
    a wake-up of tens of microseconds at every loop. ``SPIN_COUNT`` rounds keep the threads
    awake between the kernels of one forward or backward pass and asleep before the next GEMM
    (docs/design_notes/performance.md). libgomp reads the variable once, when numba loads it,
    so it is set only around that.
    """
    from numba.np.ufunc import parallel

    if "NUMBA_THREADING_LAYER_PRIORITY" not in os.environ:
        numba.config.THREADING_LAYER_PRIORITY = list(LAYER_PRIORITY)
    chosen = "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ
    if not chosen:
        os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
    try:
        parallel._launch_threads()
    finally:
        if not chosen:
            del os.environ["GOMP_SPINCOUNT"]


def thread_count(work: int, parallel_from: int | None = None) -> int:
    """The numba threads a twin touching ``work`` elements runs on now: BuildingAI's
    element-wise thread count for large work (from ``parallel_from`` elements, or
    ``MIN_PARALLEL_WORK``); one inside a pool thread, for small work, or while BLAS's threads
    may still be spinning after a call (``threads.blas_spinning``)."""
    if work < (MIN_PARALLEL_WORK if parallel_from is None else parallel_from):
        return 1
    count = get_num_threads()  # (one thread asked for: numba need not load)
    if count == 1 or not _on() or inside_pool() or blas_spinning():
        return 1
    numba = _numba()
    return 1 if numba is None else min(count, numba.config.NUMBA_NUM_THREADS)


def _use_threads(work: int, parallel_from: int | None = None) -> None:
    """Set numba's thread count for this launching thread to ``thread_count(work,
    parallel_from)``."""
    _set_threads(thread_count(work, parallel_from))


def _set_threads(count: int) -> None:
    """Set numba's thread count for this launching thread to ``count``."""
    if _threads.count != count:
        _state["numba"].set_num_threads(count)
        _threads.count = count


def _start() -> None:
    """What ``buildingai.accel.enable()`` starts here: numba, imported, with its threads."""
    if TWINS.switched_on:
        _numba()


def _off_in_forked_child() -> None:
    # GNU OpenMP's pool does not survive fork; a plain store (the registry's lock may have been
    # held by another thread of the parent at the fork)
    TWINS.switched_on = False


registry.on_enable(_start)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_off_in_forked_child)
