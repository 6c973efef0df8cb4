"""The processor's memory is bounded in bytes under ids of a megabyte."""

from __future__ import annotations

import http.client
import signal
from pathlib import Path

import pytest
import yaml

from otel_compaction.config import Settings
from otel_compaction.otlp.extract import span_items
from otel_compaction.otlp.state import MAX_ID_CHARS, ConversationState, bound_id
from tests.hostile.inputs import langchain_compaction, trace_request, turn
from tests.processor.downstream import free_port
from tests.processor.service_util import http_ready, start_process, wait_for

MIB = 1 << 20


def _rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1])


def _post(port: int, body: bytes) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/v1/traces", body=body,
                     headers={"Content-Type": "application/x-protobuf"})  # fmt: skip
        status: int = conn.getresponse().status
        return status
    finally:
        conn.close()


def test_long_ids_take_a_bounded_form_that_says_what_it_is() -> None:
    """A conversation id and a compaction id of 1 MiB are kept as their first 64 characters,
    their length and a digest: distinct ids stay distinct, the same id maps the same way."""
    long_a, long_b = "a" * MIB, "a" * (MIB - 1) + "b"
    state = ConversationState(Settings(), window=0.0)
    name, attributes = langchain_compaction(50_000, conversation=long_a)
    request = trace_request(turn(long_a, 1, 1000), (name, {**attributes, "compaction.id": long_b}),
                            turn(long_b, 1, 1000))  # fmt: skip
    state.offer(span_items(request))
    applied = state.step()
    ids = sorted(state.registry.ids())
    record = next(a.compaction for a in applied if a.compaction is not None).record
    assert len(ids) == 2
    assert all(len(i) < 200 and f"…[{MIB} chars, blake2b-128 " in i for i in ids)
    assert ids == sorted([bound_id(long_a), bound_id(long_b)])
    assert record.compaction_id == bound_id(long_b)
    assert bound_id("short") == "short"
    assert len(bound_id("x" * (MAX_ID_CHARS + 1))) < MAX_ID_CHARS


@pytest.mark.slow
def test_rss_stays_bounded_under_conversation_ids_of_a_megabyte(tmp_path: Path) -> None:
    """100 conversations whose ids are 1 MiB each, sent over OTLP/HTTP to the processor, add
    less than 40 MiB to its RSS (before the bound: about 1.2 MiB each, 120 MiB)."""
    http, admin = free_port(), free_port()
    config = tmp_path / "processor.yaml"
    config.write_text(yaml.safe_dump({
        "receivers": {"otlp_grpc": None, "otlp_http": f"127.0.0.1:{http}"},
        "metrics": {"endpoint": f"127.0.0.1:{admin}"},
        "output": {"log_findings": False},
        "processing": {"reorder_window_seconds": 0.0},
    }))  # fmt: skip
    process = start_process(config)
    try:
        assert wait_for(lambda: http_ready(admin), 30)
        for n in range(5):  # warm-up: every code path once, with ids of the same size
            assert (
                _post(http, trace_request(turn(f"w{n}" * (MIB // 2), 1, 1000)).SerializeToString())
                == 200
            )
        before = _rss_kib(process.pid)
        for n in range(100):
            conversation = f"{n:04d}" + "x" * (MIB - 4)
            body = trace_request(turn(conversation, 1, 1000), seed=n % 250 + 1).SerializeToString()
            assert _post(http, body) == 200
        grown = (_rss_kib(process.pid) - before) / 1024
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
    assert grown < 40, f"RSS grew by {grown:.1f} MiB"
