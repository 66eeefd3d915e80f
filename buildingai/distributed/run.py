"""What each rank runs under ``buildingai launch``: ``python -m buildingai.distributed.run
script.py [args]``. It runs the script as ``__main__``; when the script fails (an exception, or
``sys.exit`` with a non-zero code) it aborts the whole MPI job, so no other rank waits for it."""

from __future__ import annotations

import os
import runpy
import sys
import traceback

from ._rank_status import FILE_VARIABLE, FINISHED, RankStatus


def _record_end(reason: str) -> None:
    """Tell ``buildingai launch`` why this rank ends (its report line names it)."""
    path = os.environ.get(FILE_VARIABLE)
    if path and os.path.isfile(path):
        RankStatus(path).failing(reason)


def _abort_job(code: int) -> None:
    """MPI_Abort when this process is one of several MPI ranks; otherwise nothing."""
    module = sys.modules.get("mpi4py.MPI")
    if module is None or not module.Is_initialized() or module.Is_finalized():
        return
    if module.COMM_WORLD.Get_size() > 1:
        sys.stdout.flush()
        sys.stderr.flush()
        module.COMM_WORLD.Abort(code)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m buildingai.distributed.run script.py [args]", file=sys.stderr)
        return 2
    script = argv[0]
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `python script.py` does
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exit:
        code = exit.code
        if code in (None, 0):
            _record_end(FINISHED)
            return 0
        if not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        _record_end(f"sys.exit({exit.code!r})")
        _abort_job(code)
        return code
    except BaseException as error:
        traceback.print_exc()
        _record_end(f"raising {type(error).__name__}")
        _abort_job(1)
        return 1
    _record_end(FINISHED)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
