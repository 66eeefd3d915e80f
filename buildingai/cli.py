"""The ``buildingai`` command (also ``python -m buildingai``).

buildingai train CONFIG [key=value ...] [--resume]   train from a YAML config
buildingai eval CHECKPOINT [--data eval|train|TYPE] [--batch-size N]
buildingai info                                      versions, devices, BLAS, threads, switches
buildingai serve MODEL [--port N] [--max-batch N]     serve a checkpoint or .onnx over HTTP
buildingai launch -n N SCRIPT [args]                 run SCRIPT on N processes under mpiexec
          [--max-restarts K [--min-ranks M]]         ... restarting it when a rank dies
buildingai port FILE [-o OUT]                        rewrite a PyTorch program's import lines

A mistake in the command or the config is reported on one line with exit code 2; ``--debug``
shows the traceback instead.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence

from .errors import BuildingAIError
from .port import add_command as add_port_command


def _train(args: argparse.Namespace) -> int:
    from .train import Trainer, load_config

    config = load_config(args.config, args.overrides)
    if args.no_progress:
        config.progress = False
    trainer = Trainer.from_config(config, resume=args.resume)
    if trainer.step:
        print(f"resumed at step {trainer.step} (epoch {trainer.epoch})", file=sys.stderr)
    metrics = trainer.fit()
    print_json_line({"step": trainer.step, "epoch": trainer.epoch, **metrics})
    return 0


def print_json_line(record: dict) -> None:
    """``record`` as one line of strict JSON on standard output. JSON has no NaN or infinity:
    such values are written null and named on standard error."""
    not_finite = [key for key, value in record.items()
                  if isinstance(value, float) and not math.isfinite(value)]  # fmt: skip
    if not_finite:
        print(f"warning: {', '.join(not_finite)} ended NaN or infinite (written as null)",
              file=sys.stderr)  # fmt: skip
    print(json.dumps({key: None if key in not_finite else value for key, value in record.items()},
                     allow_nan=False))  # fmt: skip


def _eval(args: argparse.Namespace) -> int:
    from .serialization import load
    from .train import Trainer
    from .train.config import stored_config

    state = load(args.checkpoint)
    if not isinstance(state, dict) or state.get("config") is None:
        raise BuildingAIError(
            f"{args.checkpoint} holds no training config, so its model cannot be rebuilt",
            help="evaluate checkpoints written by `buildingai train` (Trainer.from_config)",
        )
    config = stored_config(state["config"], str(args.checkpoint))
    config.run_dir, config.progress = None, False  # evaluation writes nothing
    if args.data == "train":
        config.data.eval = config.data.train.to_dict()
    elif args.data != "eval":  # a dataset type, with its test split when it has one
        config.data.eval = {"type": args.data, **({"split": "test"} if args.split else {})}
    if args.batch_size:
        config.eval_batch_size = args.batch_size
    trainer = Trainer.from_config(config, verbose=False)
    trainer.model.load_state_dict(state["model"])
    metrics = trainer.evaluate()
    print_json_line({"checkpoint": str(args.checkpoint), "step": state["progress"]["step"],
                     **metrics})  # fmt: skip
    return 0


def _replay(args: argparse.Namespace) -> int:
    from .train.replay import replay

    result = replay(args.run_dir, args.steps, checkpoint=args.checkpoint,
                    from_start=args.from_start)  # fmt: skip
    print(result.summary())
    return 0 if result.matched else 1


def _serve(args: argparse.Namespace) -> int:
    from .serve import create_app, load_model, parse_shape, require_serving, serve

    require_serving()  # a missing extra is reported before the model is loaded
    if not 0 <= args.port <= 65535:
        raise BuildingAIError(f"--port {args.port} is not a TCP port; it must be 0 to 65535",
                              help="0 picks a free port")  # fmt: skip
    model = load_model(args.model, input_shape=parse_shape(args.input_shape))
    app = create_app(model, max_batch=args.max_batch, max_latency_ms=args.max_latency_ms,
                     max_body_bytes=args.max_body_bytes, max_samples=args.max_samples,
                     body_timeout_s=args.body_timeout_s)  # fmt: skip

    def ready(url: str) -> None:
        settings = f"max batch {args.max_batch}, max latency {args.max_latency_ms:g} ms"
        print(f"serving {model.kind} {args.model} at {url} ({settings}); Ctrl-C stops",
              file=sys.stderr, flush=True)  # fmt: skip

    serve(app, host=args.host, port=args.port, log_level=args.log_level, on_ready=ready)
    return 0


def info() -> dict:
    """Versions, devices, BLAS libraries and threads, CPU count: what a bug report needs (the
    machine's part of a run record, ``train.run_record.machine_report``)."""
    from .train.run_record import machine_report

    return machine_report()


def _launch(args: argparse.Namespace) -> int:
    from .distributed.launch import launch

    return launch(args.n, args.script, args.args, hostfile=args.hostfile,
                  auto_cleanup=args.auto_cleanup, timeout=args.timeout,
                  max_restarts=args.max_restarts, min_ranks=args.min_ranks,
                  slot_failures=args.slot_failures)  # fmt: skip


def _info(args: argparse.Namespace) -> int:
    report = info()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for key, value in report.items():
        if key == "blas" and isinstance(value, list):
            for pool in value:
                print(f"{'blas':<20} {pool['internal_api']} {pool['version']}, "
                      f"{pool['num_threads']} threads ({pool['filepath']})")  # fmt: skip
            continue
        if key == "accelerations":
            for name, state in value.items():
                if "." in name:  # a registered kernel: its switch is set_enabled(name, ...)
                    print(f"  {name:<34} {'on ' if state['active'] else 'off'}  {state['detail']}")
                    continue
                print(f"{name:<20} {'on ' if state['active'] else 'off'}  {state['detail']}"
                      f"  (switch: {state['switch']})")  # fmt: skip
            continue
        print(f"{key:<20} {value if value is not None else '(not installed)'}")
    return 0


TRAIN_HELP = """\
Train from a YAML config: its keys update the defaults (buildingai.train.DEFAULTS), then the
key=value overrides apply. Top-level shorthands: lr (optim.lr) and batch_size (the training
batches). A bad key or value stops here with one line naming it.

run_dir is never overwritten: a new run into a run_dir that already holds files stops before
writing anything; continue that run with --resume, or start a new one with another run_dir
(e.g. run_dir=runs/mnist-2).
"""


class OneLineParser(argparse.ArgumentParser):
    """argparse, with a mistake in the command reported on one line (exit code 2) like every
    other mistake, instead of the usage block followed by the error."""

    def error(self, message: str):
        print(f"error: {' '.join(message.split())} — help: {self.prog} --help", file=sys.stderr)
        self.exit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="buildingai", description=__doc__.splitlines()[0])
    # --debug is accepted before or after the command: both are where users type it
    debug = OneLineParser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the traceback of an error instead of one line")  # fmt: skip
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error instead of one line")  # fmt: skip
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", parents=[debug], help="train from a YAML config",
                                description=TRAIN_HELP,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    train.add_argument("config", help="a YAML config file (see examples/configs)")
    train.add_argument("overrides", nargs="*", help="key=value, +new_key=value, ~removed_key")
    train.add_argument("--resume", action="store_true",
                       help="continue the run in run_dir from its newest checkpoint (without "
                       "it, a run_dir holding files is refused, never overwritten)")  # fmt: skip
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    train.set_defaults(run=_train)

    evaluate = commands.add_parser("eval", parents=[debug], help="evaluate a checkpoint")
    evaluate.add_argument("checkpoint")
    evaluate.add_argument("--data", default="eval",
                          help="'eval' (the config's eval set), 'train', or a dataset type")  # fmt: skip
    evaluate.add_argument("--no-split", dest="split", action="store_false",
                          help="build a --data TYPE without split='test'")  # fmt: skip
    evaluate.add_argument("--batch-size", type=int, default=None)
    evaluate.set_defaults(run=_eval)

    information = commands.add_parser(
        "info", parents=[debug], help="versions, devices, BLAS, threads and acceleration switches"
    )
    information.add_argument("--json", action="store_true")
    information.set_defaults(run=_info)

    server = commands.add_parser(
        "serve", parents=[debug], help="serve a checkpoint or an ONNX file over HTTP",
        description="POST /predict {\"inputs\": [[...], ...]} (or a .npy body) answers "
        "{\"outputs\": [[...], ...]}; GET /health, /metadata, and / (a page to draw a digit on). "
        "Needs pip install 'buildingai[serve]'.",
    )  # fmt: skip
    server.add_argument("model", help="a checkpoint of `buildingai train`, its run directory, "
                        "or an .onnx file")  # fmt: skip
    server.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only)")  # fmt: skip
    server.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    server.add_argument("--max-batch", type=int, default=64,
                        help="most samples stacked into one model call (1: no batching)")  # fmt: skip
    server.add_argument("--max-latency-ms", type=float, default=5.0,
                        help="longest a request waits for others to batch with")  # fmt: skip
    server.add_argument("--max-body-bytes", type=int, default=16 * 1024 * 1024,
                        help="larger request bodies get 413")  # fmt: skip
    server.add_argument("--max-samples", type=int, default=8192,
                        help="most samples in one request (more get 413); a request runs in "
                        "parts of --max-batch samples")  # fmt: skip
    server.add_argument("--body-timeout-s", type=float, default=30.0,
                        help="a body not all sent within this many seconds gets 408")  # fmt: skip
    server.add_argument("--input-shape", default=None,
                        help="one sample's shape, e.g. 1,28,28 (default: from the model)")  # fmt: skip
    server.add_argument("--log-level", default="warning", help="uvicorn's log level")
    server.set_defaults(run=_serve)

    launcher = commands.add_parser("launch", parents=[debug], help="run a script on N processes "
                                   "under mpiexec (see docs/distributed.md)")  # fmt: skip
    launcher.add_argument("-n", type=int, default=1, help="number of processes (ranks)")
    launcher.add_argument("--hostfile", default=None, help="hosts to run on (mpiexec -hostfile)")
    launcher.add_argument("--timeout", type=float, default=None,
                          help="kill the whole job after this many seconds (exit code 124)")  # fmt: skip
    launcher.add_argument("--no-auto-cleanup", dest="auto_cleanup", action="store_false",
                          help="keep the other ranks running when one dies, so they report it "
                          "(MPICH's Hydra)")  # fmt: skip
    launcher.add_argument("--max-restarts", type=int, default=0,
                          help="start the job again up to this many times when a rank dies; "
                          "the script resumes from its last complete checkpoint")  # fmt: skip
    launcher.add_argument("--min-ranks", type=int, default=None,
                          help="fewest ranks to shrink to once a slot counts as gone "
                          "(default: -n, never shrink)")  # fmt: skip
    launcher.add_argument(
        "--slot-failures",
        type=int,
        default=2,
        help="failures after which a slot counts as gone (default 2)",
    )
    launcher.add_argument("script", help="the Python script each rank runs")
    launcher.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    launcher.set_defaults(run=_launch)

    rerun = commands.add_parser(
        "replay", parents=[debug], help="re-run recorded steps and name the first that differs",
        description="Re-run N steps of a Trainer run from a checkpoint and compare each step's "
        "parameter checksum with the one recorded in RUN_DIR/checksums.jsonl; exits 1 at the "
        "first step that differs.",
    )  # fmt: skip
    rerun.add_argument("run_dir")
    rerun.add_argument("--steps", type=int, default=10, help="how many steps to replay")
    start = rerun.add_mutually_exclusive_group()
    start.add_argument("--checkpoint", default=None,
                       help="the checkpoint to start from (default: the newest from which "
                       "--steps recorded steps follow)")  # fmt: skip
    start.add_argument("--from-start", action="store_true",
                       help="start from step 0, rebuilt from RUN_DIR/config.yaml")  # fmt: skip
    rerun.set_defaults(run=_replay)

    add_port_command(commands, parents=[debug])
    return parser


def one_line(error: BuildingAIError) -> str:
    """``error: <what went wrong> — help: <how to fix it>`` on a single line."""
    text = " ".join(line.strip() for line in error.message.splitlines())
    if error.where:
        text += f" (in {error.where})"
    if error.help:
        text += " — help: " + " ".join(line.strip() for line in error.help.splitlines())
    return f"error: {text}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    # Overrides may follow an option (train cfg.yaml --resume epochs=3), which argparse leaves over.
    if args.command == "train" and not any(item.startswith("-") for item in extra):
        args.overrides, extra = args.overrides + extra, []
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.run(args)
    except BuildingAIError as error:
        if args.debug:
            raise
        print(one_line(error), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
