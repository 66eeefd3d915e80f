"""The ``buildingai`` command (also ``python -m buildingai``).

buildingai train CONFIG [key=value ...] [--resume]   train from a YAML config
buildingai eval CHECKPOINT [--data eval|train|TYPE] [--batch-size N]
buildingai info                                      versions, devices, BLAS, threads, switches

A mistake in the command or the config is reported on one line with exit code 2; ``--debug``
shows the traceback instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .errors import BuildingAIError


def _train(args: argparse.Namespace) -> int:
    from .train import Trainer, load_config

    config = load_config(args.config, args.overrides)
    if args.no_progress:
        config.progress = False
    trainer = Trainer.from_config(config, resume=args.resume)
    if trainer.step:
        print(f"resumed at step {trainer.step} (epoch {trainer.epoch})", file=sys.stderr)
    metrics = trainer.fit()
    print(json.dumps({"step": trainer.step, "epoch": trainer.epoch, **metrics}))
    return 0


def _eval(args: argparse.Namespace) -> int:
    from .serialization import load
    from .train import Trainer, load_config

    state = load(args.checkpoint)
    if not isinstance(state, dict) or state.get("config") is None:
        raise BuildingAIError(
            f"{args.checkpoint} holds no training config, so its model cannot be rebuilt",
            help="evaluate checkpoints written by `buildingai train` (Trainer.from_config)",
        )
    config = load_config(state["config"])
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
    print(json.dumps({"checkpoint": str(args.checkpoint), "step": state["progress"]["step"],
                      **metrics}))  # fmt: skip
    return 0


def _replay(args: argparse.Namespace) -> int:
    from .train.replay import replay

    result = replay(args.run_dir, args.steps, checkpoint=args.checkpoint,
                    from_start=args.from_start)  # fmt: skip
    print(result.summary())
    return 0 if result.matched else 1


def info() -> dict:
    """Versions, devices, BLAS libraries and threads, CPU count: what a bug report needs (the
    machine's part of a run record, ``train.run_record.machine_report``)."""
    from .train.run_record import machine_report

    return machine_report()


def _info(args: argparse.Namespace) -> int:
    report = info()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for key, value in report.items():
        if key == "blas" and isinstance(value, list):
            for pool in value:
                print(f"{'blas':<15} {pool['internal_api']} {pool['version']}, "
                      f"{pool['num_threads']} threads ({pool['filepath']})")  # fmt: skip
            continue
        if key == "accelerations":
            for name, state in value.items():
                print(f"{name:<15} {'on ' if state['active'] else 'off'}  {state['detail']}"
                      f"  (switch: {state['switch']})")  # fmt: skip
            continue
        print(f"{key:<15} {value if value is not None else '(not installed)'}")
    return 0


TRAIN_HELP = """\
Train from a YAML config: its keys update the defaults (buildingai.train.DEFAULTS), then the
key=value overrides apply. Top-level shorthands: lr (optim.lr) and batch_size (the training
batches). A bad key or value stops here with one line naming it.

run_dir is never overwritten: a new run into a run_dir that already holds files stops before
writing anything; continue that run with --resume, or start a new one with another run_dir
(e.g. run_dir=runs/mnist-2).
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="buildingai", description=__doc__.splitlines()[0])
    # --debug is accepted before or after the command: both are where users type it
    debug = argparse.ArgumentParser(add_help=False)
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
