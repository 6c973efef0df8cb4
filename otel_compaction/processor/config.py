"""The processor's configuration: one YAML or JSON file, validated at start-up.

Every section has defaults that work with no file at all: OTLP/gRPC on
127.0.0.1:4317, OTLP/HTTP on 127.0.0.1:4318, ``/metrics`` and ``/healthz`` on
127.0.0.1:9464, tap mode, findings logged to stdout, nothing forwarded.

``load_config`` reads the file, applies command-line overrides and runs both
pydantic's field checks and ``ProcessorConfig.validate``'s cross-field checks,
then raises one ``ConfigError`` that lists every problem at once (the way the
Collector's ``config.Validate`` does), so a bad file is fixed in one edit.

``detectors`` holds ``Settings`` fields (thresholds); they are applied on top
of the ``OTEL_PYTHON_COMPACTION_*`` environment, so a fleet can run the same
detectors as its agents with different thresholds.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from otel_compaction.config import Settings

DEFAULT_GRPC = "127.0.0.1:4317"
DEFAULT_HTTP = "127.0.0.1:4318"
DEFAULT_METRICS = "127.0.0.1:9464"

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


class ConfigError(ValueError):
    """The configuration is invalid; ``errors`` lists every problem found."""

    def __init__(self, errors: Iterable[str]) -> None:
        self.errors = list(errors)
        lines = "\n".join(f"  - {e}" for e in self.errors)
        super().__init__(f"invalid processor configuration ({len(self.errors)} errors):\n{lines}")


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TLSConfig(_Section):
    """Server TLS: certificate and key (PEM), optionally a CA for client certificates."""

    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None


class AuthConfig(_Section):
    """Bearer-token authentication of the receivers (``Authorization: Bearer ...``)."""

    bearer_token: SecretStr | None = None
    bearer_token_file: Path | None = None


class ReceiversConfig(_Section):
    """Where the OTLP receivers listen and what they accept."""

    otlp_grpc: str | None = DEFAULT_GRPC
    otlp_http: str | None = DEFAULT_HTTP
    max_request_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1024,
        description="body limit, compressed or not (the Collector's own: 20 MiB HTTP, 4 MiB gRPC)",
    )
    max_inflight_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=1024,
        description="HTTP: bodies held at once (announced lengths); 503 + Retry-After beyond",
    )
    max_concurrent_requests: int = Field(default=16, ge=1, le=1024)
    request_timeout_seconds: float = Field(
        default=30.0, gt=0.0, le=3600.0, description="HTTP: headers and body must arrive within"
    )
    max_connections: int = Field(default=128, ge=1, description="HTTP: open connections in all")
    max_connections_per_peer: int = Field(default=32, ge=1, description="HTTP: per client IP")
    auth: AuthConfig = AuthConfig()
    tls: TLSConfig | None = None


class ProcessingConfig(_Section):
    """The reorder window and the bounds of in-memory state."""

    reorder_window_seconds: float = Field(default=2.0, ge=0.0, le=30.0)
    max_pending_items: int = Field(default=200_000, ge=1, description="spans held in the window")
    dedupe_memory: int = Field(default=262_144, ge=0, description="recent span ids remembered")
    tick_seconds: float = Field(default=0.05, gt=0.0, le=1.0)
    trim_memory_seconds: float = Field(
        default=30.0, ge=0.0, description="freed heap returned to the OS this often (0: never)"
    )


class OutputConfig(_Section):
    """What the processor emits: findings only (tap) or every span, flagged (enrich)."""

    mode: Literal["tap", "enrich"] = "tap"
    log_findings: bool = True
    service_name: str = "otel-compaction-processor"


class RetryConfig(_Section):
    """Exponential backoff with jitter between delivery attempts (never gives up)."""

    initial_interval_seconds: float = Field(default=0.5, gt=0.0)
    max_interval_seconds: float = Field(default=30.0, gt=0.0)
    multiplier: float = Field(default=2.0, ge=1.0)


class QueueConfig(_Section):
    """The persistent forwarding queue (one file per batch)."""

    directory: Path | None = None
    max_batches: int = Field(default=10_000, ge=1)
    max_bytes: int = Field(default=512 * 1024 * 1024, ge=1024)
    fsync: bool = False


class ForwardConfig(_Section):
    """The next hop: an OTLP endpoint (a Collector) that gets findings or flagged spans."""

    endpoint: str | None = None
    protocol: Literal["grpc", "http/protobuf"] = "grpc"
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: float = Field(default=10.0, gt=0.0)
    insecure: bool = True
    ca_file: Path | None = None
    compression: Literal["none", "gzip"] = "none"
    retry: RetryConfig = RetryConfig()
    queue: QueueConfig = QueueConfig()
    drain_timeout_seconds: float = Field(default=10.0, ge=0.0)


class StateConfig(_Section):
    """The snapshot of per-conversation engine state that survives a restart (off without a
    directory); see ``processor/snapshot.py`` for the file and ``docs/processor.md``."""

    directory: Path | None = None
    snapshot_interval_seconds: float = Field(
        default=30.0, gt=0.0, description="between periodic snapshots; one more on SIGTERM"
    )
    max_conversations: int = Field(
        default=100_000, ge=1, description="most recently active kept when there are more"
    )
    max_bytes: int = Field(
        default=256 * 1024 * 1024, ge=4096, description="snapshot file size limit, written and read"
    )


class MetricsConfig(_Section):
    """The Prometheus ``/metrics`` and ``/healthz`` endpoint, and optional OTLP export."""

    endpoint: str | None = DEFAULT_METRICS
    otlp_endpoint: str | None = None
    otlp_interval_seconds: float = Field(default=60.0, gt=0.0)


class ProcessorConfig(_Section):
    """The whole configuration file."""

    receivers: ReceiversConfig = ReceiversConfig()
    processing: ProcessingConfig = ProcessingConfig()
    output: OutputConfig = OutputConfig()
    forward: ForwardConfig = ForwardConfig()
    metrics: MetricsConfig = MetricsConfig()
    state: StateConfig = StateConfig()
    detectors: dict[str, Any] = Field(default_factory=dict)

    def validate_all(self) -> list[str]:
        """Every cross-field problem, as ``section.field: message`` strings."""
        errors: list[str] = []
        endpoints = {
            "receivers.otlp_grpc": self.receivers.otlp_grpc,
            "receivers.otlp_http": self.receivers.otlp_http,
            "metrics.endpoint": self.metrics.endpoint,
        }
        for where, value in endpoints.items():
            if value is not None:
                errors.extend(f"{where}: {msg}" for msg in endpoint_errors(value))
        bound = [v for v in endpoints.values() if v is not None and not v.endswith(":0")]
        if len(set(bound)) != len(bound):
            errors.append("receivers/metrics: two listeners share one HOST:PORT")
        if self.receivers.otlp_grpc is None and self.receivers.otlp_http is None:
            errors.append("receivers: at least one of otlp_grpc and otlp_http must be set")
        if self.receivers.max_inflight_bytes < self.receivers.max_request_bytes:
            errors.append("receivers.max_inflight_bytes: below max_request_bytes (no body fits)")
        errors.extend(_auth_errors(self.receivers.auth))
        errors.extend(_tls_errors(self.receivers.tls))
        errors.extend(_forward_errors(self.forward, self.output.mode))
        errors.extend(_state_errors(self.state, self.forward.queue))
        errors.extend(self._detector_errors())
        return errors

    def _detector_errors(self) -> list[str]:
        try:
            self.settings()
        except ValidationError as exc:
            return [
                f"detectors.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
                for err in exc.errors()
            ]
        return []

    def settings(self) -> Settings:
        """The detector ``Settings``: environment first, the file's ``detectors`` on top."""
        return Settings.from_env(**self.detectors)

    def bearer_token(self) -> str | None:
        """The configured bearer token, read from its file if one is named."""
        auth = self.receivers.auth
        if auth.bearer_token is not None:
            return auth.bearer_token.get_secret_value()
        if auth.bearer_token_file is not None:
            return auth.bearer_token_file.read_text(encoding="utf-8").strip()
        return None


def endpoint_errors(value: str) -> list[str]:
    """Problems with a ``HOST:PORT`` listen address (empty when it is fine)."""
    host, sep, port = value.rpartition(":")
    if not sep or not host:
        return [f"expected HOST:PORT, got {value!r}"]
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        return [f"port must be a number in 0..65535, got {port!r}"]
    host = host.strip("[]")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not _HOSTNAME.fullmatch(host):
            return [f"not a valid host name or IP address: {host!r}"]
    return []


def split_endpoint(value: str) -> tuple[str, int]:
    """``"127.0.0.1:4317"`` -> ``("127.0.0.1", 4317)``; brackets of IPv6 hosts removed."""
    host, _, port = value.rpartition(":")
    return host.strip("[]"), int(port)


def _auth_errors(auth: AuthConfig) -> list[str]:
    errors = []
    if auth.bearer_token is not None and auth.bearer_token_file is not None:
        errors.append("receivers.auth: set bearer_token or bearer_token_file, not both")
    if auth.bearer_token is not None and not auth.bearer_token.get_secret_value().strip():
        errors.append("receivers.auth.bearer_token: must not be empty")
    if auth.bearer_token_file is not None and not auth.bearer_token_file.is_file():
        errors.append(f"receivers.auth.bearer_token_file: no such file: {auth.bearer_token_file}")
    return errors


def _tls_errors(tls: TLSConfig | None) -> list[str]:
    if tls is None:
        return []
    files = {"cert_file": tls.cert_file, "key_file": tls.key_file}
    if tls.client_ca_file is not None:
        files["client_ca_file"] = tls.client_ca_file
    return [
        f"receivers.tls.{name}: no such file: {path}"
        for name, path in files.items()
        if not path.is_file()
    ]


def _forward_errors(forward: ForwardConfig, mode: str) -> list[str]:
    errors = []
    if forward.endpoint is None:
        if mode == "enrich":
            errors.append("forward.endpoint: enrich mode needs a next hop to send spans to")
        return errors
    if not forward.endpoint.startswith(("http://", "https://")) and (
        forward.protocol == "http/protobuf"
    ):
        errors.append("forward.endpoint: http/protobuf needs an http:// or https:// URL")
    if forward.queue.directory is None:
        errors.append("forward.queue.directory: required when forward.endpoint is set")
    elif forward.queue.directory.exists() and not forward.queue.directory.is_dir():
        errors.append(f"forward.queue.directory: not a directory: {forward.queue.directory}")
    if forward.ca_file is not None and not forward.ca_file.is_file():
        errors.append(f"forward.ca_file: no such file: {forward.ca_file}")
    if forward.retry.max_interval_seconds < forward.retry.initial_interval_seconds:
        errors.append("forward.retry: max_interval_seconds is below initial_interval_seconds")
    return errors


def _state_errors(state: StateConfig, queue: QueueConfig) -> list[str]:
    if state.directory is None:
        return []
    if state.directory.exists() and not state.directory.is_dir():
        return [f"state.directory: not a directory: {state.directory}"]
    if queue.directory is not None and state.directory.resolve() == queue.directory.resolve():
        # The queue takes every file in its directory for a batch or a crash leftover.
        return ["state.directory: must not be forward.queue.directory"]
    return []


def load_config(
    path: Path | None = None, overrides: Mapping[str, Mapping[str, Any]] | None = None
) -> ProcessorConfig:
    """Read, merge and validate the configuration; raise ``ConfigError`` listing all errors.

    Args:
        path: a YAML or JSON file (JSON is valid YAML); None for the defaults.
        overrides: ``{section: {field: value}}`` applied on top (the CLI flags).
    """
    raw: dict[str, Any] = {}
    if path is not None:
        raw = _read_file(path)
    for section, values in (overrides or {}).items():
        merged = dict(raw.get(section) or {})
        merged.update(values)
        raw[section] = merged
    try:
        config = ProcessorConfig.model_validate(raw)
    except ValidationError as exc:
        errors = _pydantic_errors(exc)
        detectors = raw.get("detectors")
        if isinstance(detectors, dict):
            # The detector thresholds are checked separately: list them too.
            errors.extend(ProcessorConfig(detectors=detectors)._detector_errors())
        raise ConfigError(errors) from None
    errors = config.validate_all()
    if errors:
        raise ConfigError(errors)
    return config


def _read_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc.strerror or exc}"]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError([f"{path}: not valid YAML or JSON: {exc}"]) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError([f"{path}: the top level must be a mapping of sections"])
    return data


def _pydantic_errors(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        out.append(f"{where}: {err['msg']}")
    return out
