"""``otel-compaction processor``: run the OTLP compaction processor service.

With no file the defaults work: OTLP/gRPC on 127.0.0.1:4317, OTLP/HTTP on
127.0.0.1:4318, ``/metrics`` and ``/healthz`` on 127.0.0.1:9464, tap mode,
findings logged to stdout. The flags override the file. A bad configuration
is reported with every error at once, and the exit status is 2. At start it logs
(stderr) the configuration file, the addresses it listens on, its mode and where
its output goes; an address it cannot bind is named, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

logger = logging.getLogger("otel_compaction.processor.cli")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the processor's flags."""
    parser.add_argument("--config", type=Path, metavar="FILE", help="YAML or JSON config file")
    parser.add_argument("--otlp-grpc", metavar="HOST:PORT", help="OTLP/gRPC listen address")
    parser.add_argument("--otlp-http", metavar="HOST:PORT", help="OTLP/HTTP listen address")
    parser.add_argument(
        "--metrics", metavar="HOST:PORT", help="/metrics, /healthz and /readyz listen address"
    )
    parser.add_argument(
        "--mode", choices=("tap", "enrich"), help="output mode (overrides output.mode)"
    )
    parser.add_argument("--check", action="store_true", help="validate the configuration and exit")


def overrides(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The configuration sections the flags override."""
    out: dict[str, dict[str, Any]] = {}
    if args.otlp_grpc:
        out.setdefault("receivers", {})["otlp_grpc"] = args.otlp_grpc
    if args.otlp_http:
        out.setdefault("receivers", {})["otlp_http"] = args.otlp_http
    if args.metrics:
        out.setdefault("metrics", {})["endpoint"] = args.metrics
    if args.mode:
        out.setdefault("output", {})["mode"] = args.mode
    return out


def run(args: argparse.Namespace) -> int:
    """Validate the configuration, then serve until SIGTERM (drained before exit)."""
    from otel_compaction.processor.config import ConfigError, load_config  # the processor extra

    try:
        config = load_config(args.config, overrides(args))
    except ConfigError as exc:
        print(f"otel-compaction processor: {exc}", file=sys.stderr)
        return 2
    if args.check:
        print("configuration ok", file=sys.stderr)
        return 0
    from otel_compaction.processor.service import ProcessorService

    # The start-up lines (configuration, addresses, mode) are INFO: show them without -v.
    # The service's reading of OTLP (otel_compaction.otlp) logs at the same level.
    for name in ("otel_compaction.processor", "otel_compaction.otlp"):
        logging.getLogger(name).setLevel(logging.DEBUG if args.verbose else logging.INFO)
    source = f"configuration file {args.config}" if args.config else "no configuration file"
    flags = ", ".join(f"{s}.{k}" for s, values in overrides(args).items() for k in values)
    logger.info("otel-compaction processor: %s%s", source, f" (flags set {flags})" if flags else "")
    service = ProcessorService(config)
    try:
        return service.run_until_signalled()
    except OSError as exc:
        print(f"otel-compaction processor: cannot start: {exc}", file=sys.stderr)
        return 1
