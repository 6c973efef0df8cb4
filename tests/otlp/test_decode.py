"""Decoding OTLP bodies: protobuf, JSON with hex ids, gzip, and clear errors for the rest."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_compaction.otlp.decode import (
    JSON,
    PROTOBUF,
    DecodeError,
    Signal,
    decode_body,
    decode_request,
    decompress,
    encode_json,
    encode_response,
    item_count,
)

LIMIT = 64 * 1024
TRACE_ID = "5b8efff798038103d269b633813fc60c"
SPAN_ID = "eee19b7ec3c1b174"


def _request() -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id = bytes.fromhex(TRACE_ID)
    span.span_id = bytes.fromhex(SPAN_ID)
    span.name = "chat m"
    return request


def _json_body(trace_id: str = TRACE_ID) -> bytes:
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": trace_id, "spanId": SPAN_ID, "name": "chat m", "kind": 3, "futureField": 1}
    ]}]}]}  # fmt: skip
    return json.dumps(doc).encode()


def test_protobuf_and_json_decode_to_the_same_message() -> None:
    """OTLP/JSON with hex ids (and an unknown field) parses to the protobuf's ids."""
    from_pb = decode_request(Signal.TRACES, _request().SerializeToString(), PROTOBUF, None, LIMIT)
    from_json = decode_request(Signal.TRACES, _json_body(), JSON + "; charset=utf-8", None, LIMIT)
    span = from_json.resource_spans[0].scope_spans[0].spans[0]
    assert span.trace_id == from_pb.resource_spans[0].scope_spans[0].spans[0].trace_id
    assert span.span_id.hex() == SPAN_ID
    assert item_count(Signal.TRACES, from_json) == 1


def test_decode_body_returns_the_protobuf_it_parsed() -> None:
    """The pipeline gets the (decompressed) protobuf bytes to pass on; JSON has none."""
    data = _request().SerializeToString()
    request, raw = decode_body(Signal.TRACES, gzip.compress(data), PROTOBUF, "gzip", LIMIT)
    assert raw == data
    assert item_count(Signal.TRACES, request) == 1
    assert decode_body(Signal.TRACES, _json_body(), JSON, None, LIMIT)[1] is None


def test_encode_json_writes_hex_ids() -> None:
    """The JSON encoder writes ids as hex, so files round-trip through the decoder."""
    doc = encode_json(_request())
    assert doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] == TRACE_ID


def test_gzip_bodies_are_accepted() -> None:
    """A gzip body with ``Content-Encoding: gzip`` decodes like the plain one."""
    body = gzip.compress(_request().SerializeToString())
    request = decode_request(Signal.TRACES, body, PROTOBUF, "gzip", LIMIT)
    assert item_count(Signal.TRACES, request) == 1


@pytest.mark.parametrize(
    ("body", "ctype", "encoding", "status", "words"),
    [
        (b"\xff\xff\xff", PROTOBUF, None, 400, "malformed protobuf"),
        (b"{not json", JSON, None, 400, "not valid JSON"),
        (b"[1, 2]", JSON, None, 400, "JSON object"),
        (_json_body("zz" * 16), JSON, None, 400, "must be hex"),
        (_json_body("ab" * 4), JSON, None, 400, "32 hex digits"),
        (b'{"resourceSpans": 7}', JSON, None, 400, "invalid OTLP/JSON"),
        (b"x", "text/plain", None, 415, "Content-Type"),
        (b"x", PROTOBUF, "br", 415, "Content-Encoding"),
        (b"not gzip at all", PROTOBUF, "gzip", 400, "not valid gzip"),
        (gzip.compress(b"x" * 1000)[:-12], PROTOBUF, "gzip", 400, "truncated"),
        (b"x" * (LIMIT + 1), PROTOBUF, None, 413, "exceeds"),
    ],
)
def test_bad_bodies_get_a_status_and_a_reason(
    body: bytes, ctype: str, encoding: str | None, status: int, words: str
) -> None:
    """Each kind of bad payload maps to its HTTP status with a reason naming the problem."""
    with pytest.raises(DecodeError) as info:
        decode_request(Signal.TRACES, body, ctype, encoding, LIMIT)
    assert info.value.status == status
    assert words in info.value.reason


def test_a_gzip_bomb_stops_at_the_limit() -> None:
    """A small body that inflates past the limit is refused with 413 without inflating it all."""
    bomb = gzip.compress(b"\0" * (50 * 1024 * 1024))
    assert len(bomb) < LIMIT
    with pytest.raises(DecodeError) as info:
        decompress(bomb, "gzip", LIMIT)
    assert info.value.status == 413


def test_partial_success_is_encoded_when_items_were_rejected() -> None:
    """A response with rejected items carries them in ``partial_success``."""
    body = encode_response(Signal.TRACES, JSON, rejected=3, message="late")
    assert json.loads(body) == {"partialSuccess": {"rejectedSpans": "3", "errorMessage": "late"}}


_VALID = bytes(_request().SerializeToString())


def _mutate(edits: list[tuple[int, int]]) -> bytes:
    data = bytearray(_VALID)
    for position, value in edits:
        data[position % len(data)] = value
    return bytes(data)


@settings(max_examples=300, deadline=None)
@given(
    body=st.one_of(
        st.binary(max_size=512),
        st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=6).map(_mutate),
        st.builds(lambda b: gzip.compress(b), st.binary(max_size=256)),
        st.builds(lambda b: zlib.compress(b)[:-1], st.binary(max_size=256)),
        st.recursive(
            st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
            lambda inner: st.one_of(
                st.lists(inner, max_size=4),
                st.dictionaries(
                    st.sampled_from(
                        [
                            "resourceSpans",
                            "scopeSpans",
                            "spans",
                            "traceId",
                            "spanId",
                            "attributes",
                            "key",
                            "value",
                            "name",
                            "kind",
                            "links",
                        ]
                    ),
                    inner,
                    max_size=4,
                ),
            ),
            max_leaves=20,
        ).map(lambda doc: json.dumps(doc).encode()),
    ),
    ctype=st.sampled_from([PROTOBUF, JSON, "text/plain", ""]),
    encoding=st.sampled_from([None, "gzip", "identity", "deflate", "zstd"]),
    signal=st.sampled_from(list(Signal)),
)
def test_fuzzed_bodies_never_crash_the_decoder(
    body: bytes, ctype: str, encoding: str | None, signal: Signal
) -> None:
    """Any body either decodes or raises ``DecodeError`` with a 4xx status and a reason."""
    error: DecodeError | None = None
    try:
        decode_request(signal, body, ctype, encoding, LIMIT)
    except DecodeError as exc:
        error = exc
    assert error is None or (400 <= error.status < 500 and error.reason)
