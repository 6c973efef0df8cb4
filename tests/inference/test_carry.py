"""The carry-over measure's work per call is bounded: counted in operations, not timed."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from otel_compaction.inference import (
    _placement,
    _placer,
    _replacement,
    _rewrites,
    _store,
    _summarizing,
    carry,
    history,
    messages,
)
from otel_compaction.inference.carry import CARRY_READ_CHARS, CARRY_SAMPLE, Reading, Sample
from otel_compaction.inference.history import (
    WHOLE_HISTORY_REST,
    WHOLE_HISTORY_TASK,
    HistoryTracker,
)
from otel_compaction.inference.messages import text_of
from otel_compaction.lineage import text
from otel_compaction.lineage.text import survival

SYSTEM = "You read one document and answer questions about it."
MODEL = "model-a"
TRACKER_MODULES = (history, _placement, _placer, _store, _summarizing)
"""The modules of the history tracker, which describe messages."""
VOCABULARY = [f"w{n}" for n in range(3_000)]


def _text(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(VOCABULARY)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


@contextmanager
def _counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts, while the block runs: characters split into words by the carry-over measure,
    messages described by the tracker, digests taken (a message's key, the system
    prompt's) and remembered facts copied as the old side of a whole-history replacement."""
    counts: Counter[str] = Counter()

    def counting(name: str, real: Callable[..., Any], size: Callable[..., int]) -> Any:
        def wrapper(*args: Any) -> Any:
            counts[name] += size(*args)
            return real(*args)

        return wrapper

    with monkeypatch.context() as patch:
        patch.setattr(carry, "words", counting("chars", text.words, len))
        described = counting("described", messages.describe, _one)
        for module in TRACKER_MODULES:
            patch.setattr(module, "describe", described)
        copied = counting("copied", _placement.sent_back, lambda h, *c: len(h.facts))
        for module in (_replacement, _rewrites, _summarizing):
            patch.setattr(module, "sent_back", copied)
        patch.setattr(messages, "value_digest", counting("keys", messages.value_digest, _top))
        yield counts


def _one(message: Any) -> int:
    return 1


def _top(value: Any, depth: int = 0) -> int:
    """A digest asked for from outside (not a member's, inside one)."""
    return 1 if depth == 0 else 0


def _document_loop(tracker: HistoryTracker, size: int, calls: int, start: int = 0) -> list[str]:
    """One document per request, the same system prompt, one thread; the conversations."""
    rng = random.Random(size * 1_000 + start)
    placed = []
    for n in range(start, start + calls):
        document = [{"role": "user", "content": f"Document {n}.\n{_text(rng, size)}"}]
        placement = tracker.place(None, SYSTEM, document, MODEL)
        reply = [{"role": "assistant", "content": "ok"}]
        tracker.remember_response(placement.conversation_id, reply)
        placed.append(placement.conversation_id)
    return placed


def _per_call(monkeypatch: pytest.MonkeyPatch, size: int) -> Counter[str]:
    """What the tenth call of a document loop of ``size``-character documents reads, the
    nine before it having filled the thread's recent conversations."""
    tracker = HistoryTracker(at_pressure=lambda cid, tokens: True)
    _document_loop(tracker, size, 9)
    with _counted(monkeypatch) as counts:
        placed = _document_loop(tracker, size, 1, start=9)
    signed = tracker._store._signed
    assert placed[0] not in signed or len(signed) <= carry.MAX_SIGNATURES
    return counts


def test_a_document_loop_reads_no_more_per_call_at_400_kb_than_at_10_kb(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Documents 40 times larger cost a call no more than the capped read: the new text
    once, never the remembered documents again."""
    small = _per_call(monkeypatch, 10_000)
    large = _per_call(monkeypatch, 400_000)
    assert 10_000 <= small["chars"] <= 11_000  # the new document, once for 8 candidates
    assert large["chars"] <= carry.CARRY_TEXT_CHARS + 100 <= CARRY_READ_CHARS
    assert large["chars"] < 2 * small["chars"]
    assert large["described"] == small["described"]
    assert large["keys"] == small["keys"]


def test_every_call_of_a_long_document_loop_stays_under_the_ceiling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever the loop sent before, no call reads more than ``CARRY_READ_CHARS``, and
    only ``MAX_SIGNATURES`` histories keep a signature."""
    tracker = HistoryTracker(at_pressure=lambda cid, tokens: True)
    reads = []
    for n in range(12):
        with _counted(monkeypatch) as counts:
            _document_loop(tracker, 200_000, 1, start=n)
        reads.append(counts["chars"])
    assert max(reads) <= CARRY_READ_CHARS
    assert len(set(_document_loop(tracker, 1_000, 80, start=12))) == 80
    signed = [h for h in tracker._store.by_id.values() if h.carry is not None]
    assert 0 < len(signed) <= carry.MAX_SIGNATURES


def _agent(tag: str, length: int) -> list[dict[str, Any]]:
    """An agent's history: the task, then (assistant, tool output) pairs of fixed sizes."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"Task {tag}: fix the bug."}]
    for step in range((length - 1) // 2):
        messages.append({"role": "assistant", "content": f"{tag} step {step:06d} reads"})
        messages.append({"role": "user", "content": f"{tag} output {step:06d} " + "x" * 300})
    return messages


def _first_call(monkeypatch: pytest.MonkeyPatch, recent_length: int) -> Counter[str]:
    """What the first call of a new 201-message conversation costs after eight recent
    conversations of ``recent_length`` messages in the same thread."""
    tracker = HistoryTracker(
        at_pressure=lambda cid, tokens: True, max_messages=10**6, max_chars=10**9
    )
    for n in range(8):
        tracker.place(None, SYSTEM, _agent(f"recent-{n}", recent_length), MODEL)
    new = _agent("new", 201)
    with _counted(monkeypatch) as counts:
        placement = tracker.place(None, SYSTEM, new, MODEL)
    assert placement.first
    return counts


def test_a_first_call_costs_the_same_after_small_and_large_recent_conversations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first call of a new conversation describes its own messages once and reads
    nothing of the eight recent conversations, however long they are."""
    small = _first_call(monkeypatch, 41)
    large = _first_call(monkeypatch, 4_001)
    assert small == large
    assert small["described"] == 201
    assert small["copied"] == 0
    assert small["chars"] == 0


def test_a_first_call_digests_no_message_of_a_size_no_tail_has(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only a message of a size some remembered tail has could share that tail: the others
    get no key."""
    tracker = HistoryTracker(at_pressure=lambda cid, tokens: True)
    tracker.place(None, SYSTEM, _agent("recent", 41), MODEL)
    new = [{"role": "user", "content": "Task new: fix it."}]
    for n in range(200):
        new.append({"role": "user" if n % 2 else "assistant", "content": "y" * (500 + n)})
    with _counted(monkeypatch) as counts:
        tracker.place(None, SYSTEM, new, MODEL)
    # The anchor's and the recent history's tail (indexed once, when first read): no
    # message of the new history but its first.
    assert counts["keys"] == 1 + history.TAIL_KEYS


def _old_carried(new: str, old: list[str]) -> float:
    """The measure as it was before the caps: every text read whole, every call."""
    beyond_task = (survival([new], old[1:]) or 0.0) >= WHOLE_HISTORY_REST
    if not beyond_task and (survival(old[:1], [new]) or 0.0) < WHOLE_HISTORY_TASK:
        return 0.0
    return survival([new], old) or 0.0


@pytest.mark.parametrize("seed", range(30))
def test_under_the_caps_the_measure_is_the_uncapped_one(seed: int) -> None:
    """Texts within the caps give the share the uncapped measure gave (to the last bit but
    one: it weighted the one text's share by its length and divided again)."""
    rng = random.Random(seed)
    task = _text(rng, rng.choice((12, 200)))
    outputs = [_text(rng, rng.randint(50, 1_500)) for _ in range(rng.randint(0, 6))]
    response = [{"role": "assistant", "content": _text(rng, 80)}]
    sent = [{"role": "user", "content": t} for t in [task, *outputs]]
    picked = rng.sample([task, *outputs, response[0]["content"]], k=2)
    summary = " ".join(picked) + " " + _text(rng, rng.randint(0, 600))
    reading = Reading([{"role": "user", "content": summary}])
    signature = reading.sign(None, sent, 0)
    assert signature is not None
    reading.respond(signature, tuple(response))
    old = [text_of(m) for m in [*sent, *response]]
    expected = _old_carried(summary, old)
    got = reading.carried(signature, WHOLE_HISTORY_REST, WHOLE_HISTORY_TASK)
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_a_sample_keeps_the_smallest_hashes_and_lowers_its_threshold() -> None:
    """Bottom-k: the sample holds every hash at or below its threshold, at most k of them."""
    sample = Sample()
    sample.add(set(range(CARRY_SAMPLE, 0, -1)))
    thresholds = [sample.threshold]
    sample.add({-5, 10**9})
    thresholds.append(sample.threshold)
    assert len(sample.hashes) == CARRY_SAMPLE
    assert sample.hashes[0] == -5
    sample.add({CARRY_SAMPLE + 7})
    thresholds.append(sample.threshold)
    assert thresholds == [None, CARRY_SAMPLE - 1, CARRY_SAMPLE - 1]


def test_a_history_signed_once_is_not_read_again() -> None:
    """A second call against the same remembered history reads only what was added."""
    rng = random.Random(7)
    messages = [{"role": "user", "content": _text(rng, 3_000)} for _ in range(3)]
    first = Reading([{"role": "user", "content": _text(rng, 1_000)}])
    signature = first.sign(None, messages, 0)
    spent = CARRY_READ_CHARS - first.left
    messages.append({"role": "user", "content": _text(rng, 500)})
    second = Reading([{"role": "user", "content": _text(rng, 1_000)}])
    assert second.sign(signature, messages, 0) is signature
    assert CARRY_READ_CHARS - second.left < spent - 3_000 * 2


def test_a_message_and_its_sdk_or_reordered_twin_have_the_same_lead() -> None:
    """The tail prefilter's mark follows the digest: an SDK object and its dict, or a
    dict in another key order, mark alike, so a shared tail is never passed over."""
    from anthropic.types import TextBlock, ToolUseBlock

    blocks = [
        TextBlock(type="text", text="I will read a.py"),
        ToolUseBlock(type="tool_use", id="t1", name="read", input={}),
    ]
    sdk = {"role": "assistant", "content": blocks}
    plain = {
        "content": [
            {"text": "I will read a.py", "type": "text"},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {}},
        ],
        "role": "assistant",
    }
    assert messages.value_digest(sdk) == messages.value_digest(plain)
    assert messages.lead(sdk) == messages.lead(plain) != 0
    assert messages.lead({"role": "user", "content": "a"}) != messages.lead(plain)


def _task_after_long(monkeypatch: pytest.MonkeyPatch, task: str) -> tuple[Counter[str], bool]:
    """What a one-message first call reads after eight long answered conversations at
    pressure in its thread (each a candidate it could replace whole); whether it opened a
    conversation of its own."""
    tracker = HistoryTracker(
        at_pressure=lambda cid, tokens: True, max_messages=10**6, max_chars=10**9
    )
    for n in range(8):
        placed = tracker.place(None, SYSTEM, _agent(f"recent-{n}", 401), MODEL)
        reply = [{"role": "assistant", "content": f"recent-{n} is done: the bug was in b.py."}]
        tracker.remember_response(placed.conversation_id, reply)
    with _counted(monkeypatch) as counts:
        placement = tracker.place(None, SYSTEM, [{"role": "user", "content": task}], MODEL)
    return counts, placement.first


def test_a_one_line_task_reads_nothing_of_the_recent_conversations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new task of fewer than ``CARRY_MIN_WORDS`` words is split into words itself and
    reads no recent history's text, where a longer text reads up to the ceiling."""
    task = "Task new: the tests of module b fail since the last change; fix them."
    assert len(text.words(task)) < carry.CARRY_MIN_WORDS
    short, first = _task_after_long(monkeypatch, task)
    assert first
    assert short["chars"] <= len(task)  # its own text at most
    longer = f"{task} {_text(random.Random(3), 400)}"
    long, first = _task_after_long(monkeypatch, longer)
    assert first
    assert long["chars"] > 16_000
