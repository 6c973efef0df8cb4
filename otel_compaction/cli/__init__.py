"""The ``otel-compaction`` command line: one subcommand per module, imported lazily.

Each subcommand module exposes ``add_arguments(parser)`` and ``run(args) -> int``
and imports only the core dependencies at module level, so every ``--help`` shows
the full options; a subcommand whose extra is missing stops with one line naming
the ``pip install`` that brings it (``cli._extras``).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from otel_compaction.cli._extras import DEMO, PROCESSOR, Extra
from otel_compaction.version import __version__

# name -> (module, one-line help, the extra it needs)
SUBCOMMANDS: dict[str, tuple[str, str, Extra | None]] = {
    "demo": ("otel_compaction.cli.demo", "run the scripted demo agents and write a report", DEMO),
    "analyze": (
        "otel_compaction.cli.analyze",
        "analyze OTLP/JSON traces and agent transcripts",
        None,
    ),
    "import": (
        "otel_compaction.cli.import_",
        "convert agent transcripts to OTLP spans, or replay OTLP/JSON files",
        None,
    ),
    "processor": (
        "otel_compaction.cli.processor",
        "run the OTLP compaction processor service",
        PROCESSOR,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="otel-compaction",
        description="Observe context compaction in LLM agents: pressure, phase, lineage, findings.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text, extra) in SUBCOMMANDS.items():
        description = help_text
        if extra is not None:
            description += f" (needs the {extra.name} extra: {extra.install})"
        sub_parser = sub.add_parser(name, help=help_text, description=description)
        sub_parser.set_defaults(_extra=extra)
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:  # a packaging bug: the parsers need the core only
            sub_parser.set_defaults(_unavailable=f"{name} is not available: {exc}")
            continue
        module.add_arguments(sub_parser)
        sub_parser.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    extra: Extra | None = args._extra
    unavailable = getattr(args, "_unavailable", None) or (
        extra.problem(args.command) if extra is not None else None
    )
    if unavailable:
        print(f"otel-compaction: {unavailable}", file=sys.stderr)
        return 2
    result: int = args._run(args)
    return result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
