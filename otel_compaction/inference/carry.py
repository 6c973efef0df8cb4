"""Carry-over: how much of a replacing text a remembered history holds, at a bounded cost.

A whole-history replacement (``history``, step 5) is a request of nothing but unseen
user or system text; it continues a recent conversation of its thread whose text it
carries over. The measure is the share of the new text's word 5-grams (the hashes of
``lineage.text``: the same in every process, no salted string hash) found in the old
history's text, counted only when the history beyond its task shows or the task is
restated whole (the thresholds are in ``history``).

The work per call is bounded, whatever the caller sends and whatever it sent before:

- the replacing text is read once per call, however many candidates there are: its
  first :data:`CARRY_TEXT_CHARS` characters;
- each remembered history keeps a :class:`Signature`: bottom-k samples (at most
  :data:`CARRY_SAMPLE` hashes each) of the 5-grams of its task and of the messages after
  the task, built the first time the history is a candidate and extended with the
  messages added since, so no message is read twice; a message is read up to its first
  :data:`CARRY_MESSAGE_CHARS` characters;
- one call reads at most :data:`CARRY_READ_CHARS` characters in all (the replacing text
  first, then the candidates' text not read yet, the most recent candidate first, its
  newest messages first); messages the budget does not reach are never read.

A bottom-k sample keeps every hash at or below its threshold, so a 5-gram of the new
text at or below it is looked up exactly; the share is taken over those, an unbiased
sample of the new text's 5-grams. Histories and texts under the caps are measured
exactly, as before the caps. What the caps give up, on larger ones: a replacing text is
judged by its first 16 KiB, a remembered message by its first 16 KiB, a history first
read when it is already large by its task and its newest messages (up to the budget),
shares over sampled histories are estimates (a standard error of about sqrt(0.21 / n) at
the 0.3 threshold, n the new text's 5-grams x CARRY_SAMPLE / the history's), and a
replacing text of fewer than :data:`CARRY_MIN_WORDS` words carries nothing, and no
history is read for it. See docs/instrumentation.md
(Conversations: what the carry-over measure reads, and its ceiling).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_compaction.inference.messages import MessageFacts, text_of
from otel_compaction.lineage.text import SHINGLE_WORDS, shingles, words

CARRY_TEXT_CHARS = 16_384
"""Characters of the replacing text read per call (its first ones)."""
CARRY_MESSAGE_CHARS = 16_384
"""Characters of one remembered message read into its history's signature (its first ones)."""
CARRY_READ_CHARS = 65_536
"""Characters read per call in all by the carry-over measure: the ceiling of its work."""
CARRY_SAMPLE = 4_096
"""5-gram hashes kept per part of a signature (task, rest, last response): 32 KiB each."""
CARRY_MIN_WORDS = 20
"""A replacing text of fewer words carries nothing, and no candidate's text is read for
it: a share over its 15 or fewer 5-grams is decided by two or three common phrases (the
0.15 of :data:`~otel_compaction.inference._replacement.WHOLE_HISTORY_REST`), and such a
text is the most common first call of a new conversation (a one-line task), which would
otherwise read up to :data:`CARRY_READ_CHARS` of a recent history's text to judge it
(about 10 ms). A summary of fewer than 20 words is still one when it says it is (the
marker needs no carry-over)."""
MAX_SIGNATURES = 32
"""Histories that keep a signature (least recently signed forgotten first): the recent
conversations of four threads; at most 3 MiB."""


@dataclass(slots=True)
class Sample:
    """A bottom-k sample of 5-gram hashes: every hash at or below ``threshold`` of the texts
    sampled (all of them when ``threshold`` is None), sorted, at most :data:`CARRY_SAMPLE`."""

    hashes: array[int] = field(default_factory=lambda: array("q"))
    threshold: int | None = None

    def add(self, more: set[int]) -> None:
        """Take the hashes of more text in (the threshold only falls)."""
        limit = self.threshold
        if limit is not None:
            more = {h for h in more if h <= limit}
        if not more:
            return
        merged = sorted(more.union(self.hashes))
        if len(merged) > CARRY_SAMPLE:
            del merged[CARRY_SAMPLE:]
            self.threshold = merged[-1]
        self.hashes = array("q", merged)


@dataclass(slots=True)
class Signature:
    """What the carry-over measure keeps of one history: samples of its task (the first
    message after ``head`` system messages) and of the messages after it.

    Args:
        head: leading system messages, not part of the history compared.
        task: the task's 5-gram sample.
        phrase: the task's words as `` w1 w2 `` when it has fewer than five (looked up
            as a run of words, not by 5-grams).
        rest: the sample of the messages after the task read so far.
        signed: messages of the history covered (read, or passed over by the budget).
        skipped: messages the budget passed over (never read).
        expected: the last response ``response`` samples (the history's, by identity).
        response: the sample of ``expected``.
    """

    head: int
    task: Sample
    phrase: str | None
    rest: Sample = field(default_factory=Sample)
    signed: int = 0
    skipped: int = 0
    expected: tuple[Any, ...] | None = None
    response: Sample = field(default_factory=Sample)


def may_replace(facts: Sequence[MessageFacts]) -> bool:
    """Whether a request could be a whole-history replacement of any history: nothing but
    user or system messages (a cheap test on facts already read, before any candidate)."""
    return bool(facts) and all(f.role in ("user", "system") for f in facts)


class Reading:
    """One call's carry-over measure: the replacing text, read once, and the budget."""

    __slots__ = ("flat", "left", "own", "short", "single", "words")

    def __init__(self, inserted: Sequence[Any]) -> None:
        self.left = CARRY_READ_CHARS
        text = self.read("\n".join(_texts(inserted, CARRY_TEXT_CHARS)), CARRY_TEXT_CHARS)
        tokens = words(text)
        self.own = shingles(tokens, SHINGLE_WORDS)
        self.words = len(tokens)
        self.short = self.words < CARRY_MIN_WORDS
        """Under :data:`CARRY_MIN_WORDS` words: it carries nothing, no history is read."""
        self.flat = " " + " ".join(tokens) + " "
        self.single = len(inserted) == 1
        """One message: its text is what a signature of it as a task would read."""

    def as_task(self, head: int) -> Signature | None:
        """The signature of a history whose task is the one message read (the request
        opening a conversation of its own), so that it is not read again; None when the
        text read was several messages'."""
        if not self.single:
            return None
        task = Sample()
        task.add(self.own)
        phrase = self.flat if 0 < self.words < SHINGLE_WORDS else None
        return Signature(head, task, phrase, signed=head + 1)

    def read(self, text: str, cap: int) -> str:
        """``text`` up to ``cap`` characters and what is left of the budget."""
        text = text[: min(cap, self.left)]
        self.left -= len(text)
        return text

    def carried(
        self,
        signature: Signature,
        rest_needed: float,
        task_needed: float,
    ) -> float:
        """The share of the new text's 5-grams found in the signed history, counted when
        ``rest_needed`` of them come from beyond its task or ``task_needed`` of the task's
        5-grams are restated; else 0."""
        if self.short:
            return 0.0
        beyond = _share(self.own, (signature.rest, signature.response))
        if beyond < rest_needed and self._restated(signature) < task_needed:
            return 0.0
        return _share(self.own, (signature.task, signature.rest, signature.response))

    def _restated(self, signature: Signature) -> float:
        if signature.phrase is not None:
            return 1.0 if signature.phrase in self.flat else 0.0
        task = signature.task.hashes
        if not task:
            return 0.0
        return len(self.own.intersection(task)) / len(task)

    def sign(
        self, signature: Signature | None, messages: Sequence[Any], head: int
    ) -> Signature | None:
        """``signature`` brought up to ``messages`` (made when None or for another head);
        None when the budget cannot read the task."""
        if signature is None or signature.head != head or signature.signed > len(messages):
            if head >= len(messages) or self.left <= 0:
                return None
            signature = self._task(messages[head], head)
        index = len(messages) - 1
        if index < signature.signed or self.left <= 0:
            return signature  # nothing new, or nothing left to read it with: a later call will
        found: set[int] = set()
        while index >= signature.signed and self.left > 0:
            found |= self._hashes(messages[index])
            index -= 1
        signature.skipped += index - signature.signed + 1
        signature.signed = len(messages)
        signature.rest.add(found)
        return signature

    def respond(self, signature: Signature, expected: tuple[Any, ...]) -> None:
        """The signature's sample of the last response, read when it is another one."""
        if signature.expected is expected:
            return
        whole: tuple[Any, ...] | None = expected
        found: set[int] = set()
        for message in expected:
            if self.left <= 0:
                whole = None  # read in part: read again by a call with budget left
                break
            found |= self._hashes(message)
        signature.expected, signature.response = whole, Sample()
        signature.response.add(found)

    def _task(self, message: Any, head: int) -> Signature:
        tokens = words(self.read(_text(message, CARRY_MESSAGE_CHARS), CARRY_MESSAGE_CHARS))
        task = Sample()
        task.add(shingles(tokens, SHINGLE_WORDS))
        phrase = " " + " ".join(tokens) + " " if 0 < len(tokens) < SHINGLE_WORDS else None
        return Signature(head, task, phrase, signed=head + 1)

    def _hashes(self, message: Any) -> set[int]:
        text = self.read(_text(message, CARRY_MESSAGE_CHARS), CARRY_MESSAGE_CHARS)
        return shingles(words(text), SHINGLE_WORDS)


def _share(own: set[int], samples: Sequence[Sample]) -> float:
    """The share of ``own`` found in the union of ``samples``, over the hashes of ``own`` at
    or below every sample's threshold (all of them when none was cut)."""
    limits = [s.threshold for s in samples if s.threshold is not None]
    pool = own if not limits else {h for h in own if h <= min(limits)}
    if not pool:
        return 0.0
    found: set[int] = set()
    for sample in samples:
        found |= pool.intersection(sample.hashes)
    return len(found) / len(pool)


def _text(message: Any, cap: int) -> str:
    return text_of(message)[:cap]


def _texts(messages: Iterable[Any], cap: int) -> list[str]:
    """The texts of ``messages`` until ``cap`` characters are gathered."""
    texts: list[str] = []
    total = 0
    for message in messages:
        if total >= cap:
            break
        text = text_of(message)
        texts.append(text)
        total += len(text) + 1
    return texts
