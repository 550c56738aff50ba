"""The command line every benchmark module starts from: its docstring as help, one subcommand per study, and
the library's progress notes shown in the log."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def script_parser(doc: str | None) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """(the parser, its required subcommands) for a module whose usage is `doc`."""
    from polyembed.messages import show_messages

    show_messages()  # the library's progress notes in the benchmark's log
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser, parser.add_subparsers(dest="command", required=True)


def invocation() -> str:
    """This process's command line as it was typed (`python -m benchmarks.emmax.run run --seed 0`), stored with a
    result so that it says how it was made."""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    program = f"python -m {spec.name}" if spec is not None and spec.name else f"python {Path(sys.argv[0]).name}"
    return " ".join([program, *sys.argv[1:]])
