"""The side-by-side benchmark suite: BuildingAI, PyTorch eager and hand-written NumPy on the same
workloads, in the same run.

Run: ``python -m benchmarks [--quick] [--threads 1,2]
[--only mlp,cnn,transformer,transformer-gelu,inference,micro,gpt,resnet18,lstm-lm]
[--profile]``. Each training workload also times BuildingAI's step compiled
(``buildingai.compile``); the real workloads (``gpt``, ``resnet18``, ``lstm-lm``: models written
for PyTorch, run unchanged) also ``torch.compile``, compile times and peak memory. Publish with
the OpenBLAS kernel chosen for the machine:
``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks``.

The page's synthetic tables are one part, written by a run of all six synthetic workloads: a run
of some of them leaves the page's tables as they are (its own page goes to ``--markdown FILE``),
and the real workloads are merged one by one (``suite/real_report.py``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .common import accelerate
from .suite import inference, micro, page, real_report, real_workloads, report, train
from .suite.harness import CrossCheckError

SYNTHETIC = ("mlp", "cnn", "transformer", "transformer-gelu", "inference", "micro")
WORKLOADS = SYNTHETIC + tuple(real_workloads.WORKLOADS)
ROOT = Path(__file__).resolve().parent.parent


def run(only: list[str], quick: bool, threads: list[int | None], log=print) -> tuple[list, list]:
    """Run the chosen workloads; returns (records, failures). A workload whose
    implementations disagree is reported in ``failures`` and not timed."""
    records, failures = [], []
    for name in only:
        started = time.perf_counter()
        try:
            if name in real_workloads.WORKLOADS:
                new = real_workloads.run(name, quick, threads, log)
            elif name in train.WORKLOADS:
                new = train.run(name, quick, threads)
            elif name == "inference":
                new = inference.run(quick, threads)
            else:
                new = micro.run(quick, threads)
        except CrossCheckError as error:
            failures.append(str(error))
            log(f"{name}: ABORTED — {error}")
            continue
        records += new
        log(f"{name}: {len(new)} rows in {time.perf_counter() - started:.1f} s")
    return records, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes, a couple of steps: the correctness cross-check only",
    )
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument(
        "--only",
        default=",".join(WORKLOADS),
        help="comma-separated workloads: " + ", ".join(WORKLOADS),
    )
    parser.add_argument(
        "--profile", action="store_true", help="also cProfile BuildingAI's training steps"
    )
    parser.add_argument(
        "--markdown",
        default=None,
        help="write the Markdown report here (default: docs/benchmarks.md for "
        "a full run, nothing for --quick)",
    )
    parser.add_argument(
        "--results",
        default=str(ROOT / "benchmarks" / "results"),
        help="directory for the JSON record of the run",
    )
    parser.add_argument(
        "--return-freed-memory",
        action="store_true",
        help="leave glibc malloc at its defaults (freed memory goes back to the OS) instead of "
        "calling buildingai.backend.retain_freed_memory(), as Trainer does",
    )
    args = parser.parse_args(argv)
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(only) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; choose from {', '.join(WORKLOADS)}")
    threads = [int(t) for t in args.threads.split(",") if t.strip()]

    if not args.return_freed_memory:
        # The process-wide malloc setting Trainer applies; it serves all three implementations.
        from buildingai.backend import retain_freed_memory

        retain_freed_memory()
    info = report.full_environment()
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    records, failures = run(only, args.quick, threads, log)
    profiles = None
    if args.profile:
        from .suite.profiling import profile_step

        profiles = {
            name: profile_step(name, args.quick) for name in only if name in train.WORKLOADS
        }
    arguments = {
        "command": "python -m benchmarks " + " ".join(argv if argv is not None else sys.argv[1:]),
        "quick": args.quick,
        "threads": threads,
        "only": only,
        "failures": failures,
    }
    path = report.write_json(records, info, arguments, Path(args.results))
    synthetic = [r for r in records if r["workload"] not in real_workloads.WORKLOADS]
    real = [r for r in records if r["workload"] in real_workloads.WORKLOADS]
    main_page = None
    if any(name in SYNTHETIC for name in only):
        main_page = report.markdown(synthetic, info, arguments, profiles)
        if failures:
            main_page += "\n## Aborted workloads\n\n" + "\n".join(f"- {f}" for f in failures)
    regions = {}
    real_failures = [
        f for f in failures if f.startswith(tuple(f"[{n}]" for n in real_workloads.WORKLOADS))
    ]
    failed = [n for n in real_workloads.WORKLOADS if any(f.startswith(f"[{n}]") for f in failures)]
    markdown_path = args.markdown or (None if args.quick else str(ROOT / "docs" / "benchmarks.md"))
    target = Path(markdown_path) if markdown_path else None
    if real or real_failures:
        loaded = (
            f"Load average at the start: {info.get('load_average_at_start', 'unknown')} on "
            f"{info.get('cores')} logical cores (other work on the machine makes the times noisy)"
        )
        run_of = {"command": arguments["command"], "loaded": loaded}
        real = real_report.merged(real, run_of, target, failed)
        regions[real_report.START] = real_report.section(real, real_failures)
    text = page.compose(main_page, regions)
    print(text)
    if target is not None:
        existing = target.read_text() if target.exists() else ""
        missing = [name for name in SYNTHETIC if name not in only]
        if main_page is not None and missing and page.split(existing)[0].strip():
            # a subset's tables would replace every synthetic workload's rows on the page
            log(f"kept the synthetic tables of {markdown_path}: this run measured "
                f"{', '.join(n for n in only if n in SYNTHETIC)}, not {', '.join(missing)}; "
                f"publish with all of them (--only {','.join(SYNTHETIC)}) or write this run's "
                "page elsewhere (--markdown FILE)")  # fmt: skip
            main_page = None
        target.write_text(page.compose(main_page, regions, existing))
        if real:
            real_report.save(real, target)
        log(f"wrote {markdown_path}")
    log(f"wrote {path}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
