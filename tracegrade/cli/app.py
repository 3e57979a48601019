"""The `tracegrade` command: score exports, run the demo, query the store, judge, import."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

from tracegrade.cli.compare import add_compare_command
from tracegrade.cli.confidence import add_confidence_command
from tracegrade.cli.exits import EXIT_FAILED, EXIT_LOCKED, EXIT_OK, EXIT_USAGE, exit_for_signal
from tracegrade.cli.exports import add_export_command
from tracegrade.cli.imports import add_import_command
from tracegrade.cli.judge import add_judge_command
from tracegrade.cli.operations import add_operations_command
from tracegrade.cli.phoenix import add_phoenix_commands
from tracegrade.cli.report import add_report_command
from tracegrade.cli.scoring import add_scoring_commands

__all__ = ["main"]


def _quiet_prefect() -> None:
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tracegrade", description=__doc__)
    parser.add_argument(
        "--debug",
        action="store_true",
        help="on a fault of the store or the machine, print the traceback too",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    add_scoring_commands(commands)
    add_operations_command(commands)
    add_import_command(commands)
    add_confidence_command(commands)
    add_judge_command(commands)
    add_report_command(commands)
    add_compare_command(commands)
    add_phoenix_commands(commands)
    add_export_command(commands)
    return parser


def _stop(signum: int, frame: FrameType | None) -> None:
    from pipelines.errors import RunStopped
    from storage.store.interrupts import interrupt

    interrupt(RunStopped(signum))


@contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """SIGTERM (a scheduler, `kill`) and SIGINT (Ctrl-C) stop the command the same way: the
    run in progress records itself as failed and lets go of the database."""
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (the README lists them)."""
    from pipelines.errors import RunStopped
    from storage.errors import InputError, StoreLockedError, StoreOpenError
    from transforms.errors import ConfigError, TracegradeError

    args = _parser().parse_args(argv)
    _quiet_prefect()
    try:
        with _stopped_by_signals():
            return int(args.handler(args))
    except (ConfigError, InputError, StoreOpenError) as exc:
        print(f"tracegrade: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StoreLockedError as exc:
        print(f"tracegrade: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    except TracegradeError as exc:
        print(f"tracegrade: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:
        # the reader went away (`tracegrade sql ... | head`): not an error; stdout is gone,
        # so Python's own flush at exit must not complain either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except (RunStopped, KeyboardInterrupt):
        return _stopped()
    except Exception as exc:
        from storage.store.faults import describe_fault

        line = describe_fault(exc, getattr(args, "db", None))
        if line is None:
            raise
        if args.debug:
            traceback.print_exc()
        print(f"tracegrade: {line}", file=sys.stderr)
        return EXIT_FAILED


def _stopped() -> int:
    """The status and line of a command stopped by SIGINT or SIGTERM."""
    from pipelines.errors import RunStopped
    from storage.store.interrupts import requested

    stop = requested()
    signum = stop.signum if isinstance(stop, RunStopped) else signal.SIGINT
    name = signal.Signals(signum).name
    print(f"tracegrade: stopped by {name}; a rerun continues where it stopped", file=sys.stderr)
    return exit_for_signal(signum)


if __name__ == "__main__":
    sys.exit(main())
