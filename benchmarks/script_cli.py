"""The command line every benchmark script starts from: its docstring as help, one subcommand per study, and
the library's progress notes shown in the log."""

from __future__ import annotations

import argparse


def script_parser(doc: str | None) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """(the parser, its required subcommands) for a script whose usage is `doc`."""
    from polyembed.messages import show_messages

    show_messages()  # the library's progress notes in the benchmark's log
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser, parser.add_subparsers(dest="command", required=True)
