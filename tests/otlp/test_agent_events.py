"""Claude Code's and Codex's own log events become turns, compactions and summarizer costs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from otel_compaction import semconv as sc
from otel_compaction.otlp.agent_events import logs_to_items
from otel_compaction.otlp.extract import Item, ItemKind
from tests.processor.test_golden import CAPTURES, CLAUDE_CODE_CAPTURE

ROOT = Path(__file__).resolve().parents[2]


def _record(
    attrs: dict[str, AnyValue], *, body: str = "", time_ns: int = 5, observed_ns: int = 0
) -> ExportLogsServiceRequest:
    request = ExportLogsServiceRequest()
    record = request.resource_logs.add().scope_logs.add().log_records.add()
    record.time_unix_nano = time_ns
    record.observed_time_unix_nano = observed_ns
    if body:
        record.body.string_value = body
    for key, value in attrs.items():
        record.attributes.append(KeyValue(key=key, value=value))
    return request


def _s(text: str) -> AnyValue:
    return AnyValue(string_value=text)


def _i(number: int) -> AnyValue:
    return AnyValue(int_value=number)


def _api_request(source: str | None) -> list[Item]:
    attrs = {
        sc.EVENT_NAME: _s("api_request"),
        sc.SESSION_ID: _s("s"),
        sc.CLAUDE_CODE_INPUT_TOKENS: _i(2),
        sc.CLAUDE_CODE_CACHE_READ_TOKENS: _i(24_689),
        sc.CLAUDE_CODE_CACHE_CREATION_TOKENS: _i(7_420),
        sc.CLAUDE_CODE_OUTPUT_TOKENS: _i(1_856),
        sc.CLAUDE_CODE_DURATION_MS: _i(13_741),
        sc.CLAUDE_CODE_COST_USD: AnyValue(double_value=0.0531818),
    }
    if source is not None:
        attrs[sc.CLAUDE_CODE_QUERY_SOURCE] = _s(source)
    return list(logs_to_items(_record(attrs, body="claude_code.api_request")))


@pytest.mark.parametrize(
    "source", [None, "sdk", "repl_main_thread", "repl_main_thread:outputStyle:x"]
)
def test_the_agents_own_requests_are_turns(source: str | None) -> None:
    """The main loop's requests (or ones that name no source) are turns, context = input +
    cache read + cache creation, the cache read kept for the engine."""
    (item,) = _api_request(source)
    assert item.kind is ItemKind.TURN
    assert item.turn is not None
    assert (item.turn.context_tokens, item.turn.cache_read_tokens) == (32_111, 24_689)


def test_the_summarizers_request_is_a_cost_and_others_are_not_read() -> None:
    """query_source=compact is the next compaction's cost; a sub-agent's or a side query's
    request (another context) is no engine input."""
    (item,) = _api_request("compact")
    assert item.kind is ItemKind.SUMMARIZER
    assert item.turn is None
    cost = item.summarizer
    assert cost is not None
    assert (cost.calls, cost.input_tokens, cost.output_tokens) == (1, 32_111, 1_856)
    assert (cost.duration_s, cost.cost_usd) == (13.741, 0.0531818)
    assert _api_request("agent:custom") == []
    assert _api_request("side_question") == []


def test_a_failed_compaction_keeps_its_error_and_post_tokens_is_the_summary() -> None:
    """success="false" is a failed summary step with Claude Code's error; a successful one's
    post_tokens is the reported size after and the summary's size, never the size after."""
    base = {
        sc.EVENT_NAME: _s("compaction"),
        sc.SESSION_ID: _s("s"),
        sc.CLAUDE_CODE_TRIGGER: _s("auto"),
    }
    failed = {
        **base,
        sc.CLAUDE_CODE_SUCCESS: _s("false"),
        sc.CLAUDE_CODE_ERROR: _s("too_few_groups"),
        sc.CLAUDE_CODE_PRE_TOKENS: _s("34181"),
    }
    (item,) = logs_to_items(_record(failed, body="claude_code.compaction"))
    assert item.compaction is not None
    assert (item.compaction.failed, item.compaction.error) == (True, "too_few_groups")
    done = {**base, sc.CLAUDE_CODE_SUCCESS: _s("true"), sc.CLAUDE_CODE_PRE_TOKENS: _s("35113"),
            sc.CLAUDE_CODE_POST_TOKENS: _s("3909")}  # fmt: skip
    (item,) = logs_to_items(_record(done, body="claude_code.compaction"))
    obs = item.compaction
    assert obs is not None
    assert (obs.failed, obs.error, obs.tokens_before) == (False, None, 35_113)
    assert (obs.tokens_after, obs.summary_tokens, obs.context_after) == (3_909, 3_909, None)


def _codex(kind: str, output: str, *, call_site: str = "") -> list[Item]:
    attrs = {
        sc.EVENT_NAME: _s(sc.CODEX_EVENT_SSE),
        sc.CODEX_EVENT_KIND: _s(kind),
        sc.CODEX_CONVERSATION_ID: _s("conv-1"),
        sc.CODEX_MODEL: _s("gpt-5.6-sol"),
        sc.CODEX_INPUT_TOKENS: _s("19985"),
        sc.CODEX_OUTPUT_TOKENS: _s(output),
        sc.CODEX_CACHED_TOKENS: _i(11_008),
    }
    request = _record(attrs, time_ns=0, observed_ns=1_788_303_270_024_397_000)
    if call_site:
        request.resource_logs[0].scope_logs[0].log_records[0].event_name = call_site
    return list(logs_to_items(request))


def test_codex_completed_responses_are_turns_at_their_observed_time() -> None:
    """A response.completed with output is a turn of its conversation.id, context = input
    tokens (cached ones included), placed at the observed time (Codex sends time 0); the
    tracing call site Codex writes in event_name does not hide the event's name."""
    (item,) = _codex(sc.CODEX_RESPONSE_COMPLETED, "125", call_site="event otel/src/x.rs:1012")
    assert (item.kind, item.conversation_id, item.provider) == (ItemKind.TURN, "conv-1", "openai")
    assert item.time_ns == 1_788_303_270_024_397_000
    assert item.turn is not None
    assert (item.turn.context_tokens, item.turn.cache_read_tokens) == (19_985, 11_008)
    assert item.turn.model == "gpt-5.6-sol"


def test_codex_warm_up_and_other_events_are_no_turns() -> None:
    """The start-up warm-up (nothing generated) and other server events are not turns."""
    assert _codex(sc.CODEX_RESPONSE_COMPLETED, "0") == []
    assert _codex("response.output_item.done", "125") == []


_KEYS_SCRIPT = """
import json, sys
from tests.processor.golden import read_requests
from otel_compaction.otlp.agent_events import logs_to_items
from otel_compaction.otlp.extract import spans_to_items
from tests.processor.golden import TESTDATA
logs = [i.dedupe_key for _, r in read_requests(__import__("pathlib").Path(sys.argv[1]))
        for i in logs_to_items(r)]
spans = [i.dedupe_key for _, r in read_requests(TESTDATA / "healthy.traces.jsonl")
         for i in spans_to_items(r)]
print(json.dumps([logs, spans]))
"""


def test_dedupe_keys_are_the_same_in_every_process() -> None:
    """The key a record or span is de-duplicated by does not depend on PYTHONHASHSEED."""
    capture = str(CAPTURES / f"{CLAUDE_CODE_CAPTURE}.jsonl")
    runs = []
    for seed in ("0", "1"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", _KEYS_SCRIPT, capture],
            cwd=ROOT, env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        runs.append(json.loads(out.stdout))
    assert runs[0] == runs[1]
    logs, spans = runs[0]
    assert len(set(logs)) == len(logs) == 12  # 5 turns, 3 summarizer calls, 4 compactions
    assert len(set(spans)) == len(spans) > 0
