"""``otel-compaction import FILE... (--otlp-endpoint URL | --out FILE)``.

Converts Claude Code transcripts and Codex rollouts into the spans the live
instrumentation emits (``chat {model}`` inference spans with ``gen_ai.*`` and
``compaction.*`` attributes, ``compaction`` spans, one trace per conversation),
and sends them to an OTLP endpoint (a Collector, Jaeger, the processor) or
writes them as OTLP/JSON lines that ``otel-compaction analyze`` reads back.
OTLP/JSON trace files given with ``--otlp-endpoint`` are replayed: their
requests are sent on unchanged. Exit status 1 when a file could not be read at
all or spans could not be sent.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

from opentelemetry.sdk.trace.export import SpanExporter

from otel_compaction.cli._inputs import (
    add_input_arguments,
    diagnostics_to_stderr,
    input_paths,
    print_skip_total,
    progress_for,
)
from otel_compaction.cli._replay import GrpcSend, HttpSend, replay_file
from otel_compaction.config import Settings
from otel_compaction.report.text import counted
from otel_compaction.transcripts.importer import DEFAULT_SERVICE_NAME, ImportResult, import_files
from otel_compaction.transcripts.otlp_file import OtlpJsonFileExporter

PROTOCOLS = ("http/protobuf", "grpc")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the subcommand's arguments."""
    add_input_arguments(
        parser,
        "Claude Code transcripts, Codex rollouts, OTLP/JSON trace files (replayed as they are "
        "with --otlp-endpoint), or directories",
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--otlp-endpoint",
        metavar="URL",
        help="send the spans over OTLP, e.g. http://127.0.0.1:4318 (http) or :4317 (grpc)",
    )
    target.add_argument("--out", type=Path, metavar="FILE", help="write OTLP/JSON lines here")
    parser.add_argument(
        "--otlp-protocol",
        choices=PROTOCOLS,
        default="http/protobuf",
        help="OTLP transport for --otlp-endpoint (default: http/protobuf)",
    )
    parser.add_argument(
        "--service-name", default=DEFAULT_SERVICE_NAME, help="service.name of the spans"
    )
    parser.add_argument(
        "--capture-content",
        action="store_true",
        help="put summary texts on compaction spans (also on with the GenAI capture env var)",
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, help="OTLP export timeout in seconds"
    )


def make_exporter(args: argparse.Namespace) -> SpanExporter:
    """The exporter the arguments ask for."""
    if args.out is not None:
        return OtlpJsonFileExporter(args.out)
    endpoint: str = args.otlp_endpoint
    if args.otlp_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        insecure = urlsplit(endpoint).scheme != "https"
        return GrpcExporter(endpoint=endpoint, insecure=insecure, timeout=args.timeout)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=traces_url(endpoint), timeout=args.timeout)


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL: ``/v1/traces`` added to a bare endpoint."""
    parts = urlsplit(endpoint)
    if parts.path.rstrip("/").endswith("/v1/traces"):
        return endpoint
    return endpoint.rstrip("/") + "/v1/traces"


def run(args: argparse.Namespace) -> int:
    """Import the transcripts."""
    paths = input_paths(args)
    if not paths:
        print("otel-compaction import: no input files found", file=sys.stderr)
        return 1
    settings = Settings.from_env()
    if args.capture_content:
        settings = settings.model_copy(update={"capture_content": True})
    diagnostics = diagnostics_to_stderr("import")
    progress = progress_for(args, paths, "import")
    try:
        exporter = make_exporter(args)
    except (ValueError, OSError) as exc:
        print(f"otel-compaction import: {exc}", file=sys.stderr)
        return 1
    send = None if args.otlp_endpoint is None else make_replay_send(args)
    replay = (
        None
        if send is None
        else partial(replay_file, send=send, diagnostics=diagnostics, progress=progress)
    )
    try:
        result = import_files(
            paths, exporter, settings, diagnostics, progress, service_name=args.service_name,
            replay=replay,
        )  # fmt: skip
    finally:
        if isinstance(send, GrpcSend):
            send.close()
    print_skip_total(diagnostics, "import")
    return _summarize(result, args)


def make_replay_send(args: argparse.Namespace) -> HttpSend | GrpcSend:
    """The sender of OTLP/JSON requests to ``--otlp-endpoint``, over ``--otlp-protocol``."""
    if args.otlp_protocol == "grpc":
        return GrpcSend(args.otlp_endpoint, args.timeout)
    return HttpSend(traces_url(args.otlp_endpoint), args.timeout)


def _summarize(result: ImportResult, args: argparse.Namespace) -> int:
    for error in result.errors:
        print(f"otel-compaction import: cannot read {error}", file=sys.stderr)
    target = args.out if args.out is not None else args.otlp_endpoint
    replayed = (
        f", {counted(result.replayed_files, 'OTLP/JSON file')} replayed"
        if result.replayed_files
        else ""
    )
    print(
        f"otel-compaction import: {counted(result.conversations, 'conversation')} "
        f"({counted(result.turns, 'turn')}, {counted(result.compactions, 'compaction')}) "
        f"from {counted(result.files, 'file')}{replayed}: "
        f"{counted(result.spans_exported, 'span')} written to {target}",
        file=sys.stderr,
    )
    if result.spans_failed:
        print(
            f"otel-compaction import: {counted(result.spans_failed, 'span')} could not be exported",
            file=sys.stderr,
        )
    return 1 if result.errors or result.spans_failed else 0
