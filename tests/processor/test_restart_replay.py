"""After a SIGKILL, no Claude Code turn is applied twice (snapshot + replay).

Claude Code's events carry no turn index, so the turn mark cannot refuse them; a batch whose
items were applied but which was not yet released (an older batch ahead of it still in its
reorder window) is replayed after a crash. The crash is made here by abandoning the pipeline
and its queue without any drain, as a SIGKILL leaves them, with a clock of our own.
"""

from __future__ import annotations

from pathlib import Path

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from otel_compaction import semconv as sc
from otel_compaction.otlp.decode import Signal
from otel_compaction.processor.pipeline import Pipeline
from otel_compaction.processor.queue import PersistentQueue
from otel_compaction.processor.snapshot import SnapshotStore
from tests.processor.conftest import make_config

BASE_NS = 1_794_528_000_000_000_000


def _events(*events: tuple[str, int]) -> ExportLogsServiceRequest:
    """One request of Claude Code ``api_request`` events: (session, second) each."""
    request = ExportLogsServiceRequest()
    scope = request.resource_logs.add().scope_logs.add()
    for session, second in events:
        record = scope.log_records.add(time_unix_nano=BASE_NS + second * 10**9)
        record.body.string_value = "claude_code.api_request"
        attrs = {
            sc.EVENT_NAME: "api_request",
            sc.SESSION_ID: session,
            sc.CLAUDE_CODE_INPUT_TOKENS: str(1000 + second),
            sc.CLAUDE_CODE_MODEL: "m",
        }
        record.attributes.extend(KeyValue(key=k, value=AnyValue(string_value=v))
                                 for k, v in attrs.items())  # fmt: skip
    return request


def _turns(pipeline: Pipeline, session: str) -> int:
    analyzer = pipeline.state.registry.peek(session)
    return 0 if analyzer is None else analyzer._turn_index


def _processor(tmp_path: Path, now: list[float], mode: str) -> tuple[Pipeline, SnapshotStore]:
    config = make_config(tmp_path, mode, processing={"reorder_window_seconds": 2.0})
    assert config.forward.queue.directory is not None
    queue = PersistentQueue(config.forward.queue.directory)
    pipeline = Pipeline(config, queue=queue, clock=lambda: now[0])
    return pipeline, SnapshotStore(tmp_path / "state", pipeline.settings)


def _crash_and_restart(tmp_path: Path, mode: str) -> tuple[int, int, int]:
    now = [0.0]
    first, store = _processor(tmp_path, now, mode)
    first.submit(Signal.LOGS, _events(("session-y", 1)), "http")
    now[0] = 1.0
    first.submit(Signal.LOGS, _events(("session-x", 2), ("session-y", 3)), "http")
    now[0] = 2.1
    first.step()  # session-y's window closed: both its turns applied; the batch with x waits
    applied_before = _turns(first, "session-y")
    # The periodic snapshot, as the service writes it; then SIGKILL: nothing else runs.
    store.save(first.state, first.unreleased_keys())
    now[0] = 10.0
    second, store = _processor(tmp_path, now, mode)
    store.load(second.state)
    second.recover()
    second.drain()
    return applied_before, _turns(second, "session-y"), _turns(second, "session-x")


def test_a_replayed_batch_after_sigkill_applies_no_claude_code_turn_twice(tmp_path: Path) -> None:
    """Tap mode: session-y had 2 turns when the snapshot was written; after the replay it still
    has 2, and session-x, never applied before the crash, gets its 1."""
    assert _crash_and_restart(tmp_path, "tap") == (2, 2, 1)


def test_the_same_holds_in_enrich_mode(tmp_path: Path) -> None:
    """Enrich mode keeps the same order of release, so the same replay: 2, 2 and 1."""
    assert _crash_and_restart(tmp_path, "enrich") == (2, 2, 1)
