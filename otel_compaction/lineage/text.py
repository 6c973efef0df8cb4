"""Text matching for summaries: fingerprints, shingle sketches and overlap estimates.

Summaries are never kept whole. A summary leaves behind a *fingerprint* (the
first 16 hex digits of the SHA-256 of its whitespace-normalised text) for exact
matches, and a bounded *sketch* of its word shingles for fuzzy ones:

- a shingle is a run of ``k`` consecutive words (lower-cased ``\\w+`` runs),
  ``k = 5`` or the whole text when it is shorter; its hash is the same in every
  process (each word becomes an int, see :func:`word_ids`, and a tuple of ints
  hashes without Python's per-process string salt), so a sketch means the same
  after a restart (``processor/snapshot.py`` keeps them) and a truncated sketch
  samples the same shingles in every run;
- the sketch keeps at most ``MAX_SKETCH`` shingle hashes, the smallest ones (a
  bottom-k sample, uniform because the hashes are), plus the largest hash kept;
  a shingle of another text can only be compared with the sketch when its hash
  is at or below that threshold, which keeps every estimate unbiased.

Overlap of a text ``A`` with a text ``B`` is the fraction of ``A``'s shingles
that also occur in ``B``; "tokens of ``A`` repeated from ``B``" is that fraction
times ``A``'s token count.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

SHINGLE_WORDS = 5
MAX_SKETCH = 1024
# Fuzzy matches need most of a summary's shingles inside the candidate text:
# wrapping ("Here is a summary of the conversation to date: ...") adds shingles
# to the candidate, which does not lower this fraction.
CONTAINMENT_MATCH = 0.8
# Very long compacted messages are matched on their first words only; a
# summary re-injected into the context sits at the start of its message.
MAX_WORDS = 200_000

_WORD = re.compile(r"\w+")
_blake2b = hashlib.blake2b


def normalise(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return " ".join(text.split())


def fingerprint(text: str) -> str:
    """A short, stable hex digest of ``text`` that ignores whitespace differences."""
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()[:16]


def words(text: str) -> list[str]:
    """The lower-cased word runs of ``text`` (at most ``MAX_WORDS``)."""
    found: list[str] = []
    for match in _WORD.finditer(text.lower()):
        found.append(match.group())
        if len(found) >= MAX_WORDS:
            break
    return found


def shingles(tokens: list[str], k: int) -> set[int]:
    """Hashes of every run of ``k`` consecutive words (one run when shorter than k).

    The same in every process: the words are numbered by :func:`word_ids`, not
    hashed by Python's salted string hash.
    """
    if not tokens:
        return set()
    ids = word_ids(tokens)
    if len(ids) <= k:
        return {hash(tuple(ids))}
    # zip of k shifted slices yields each run as a tuple, without a slice per run.
    return set(map(hash, zip(*(ids[j : len(ids) - k + 1 + j] for j in range(k)), strict=False)))


def word_ids(tokens: list[str]) -> list[int]:
    """Each word as a stable int below 2**56: its UTF-8 bytes read as a number when they
    fit in 7 bytes (most words; no word holds a NUL, so distinct words give distinct
    ints), else the first 7 bytes of its BLAKE2b digest.

    Below 2**61 an int hashes as itself, so a tuple of them hashes the same in
    every process of the same Python; each distinct word is converted once.
    """
    unique = set(tokens)
    ids = dict(zip(unique, map(_word_id, unique), strict=True))
    return list(map(ids.__getitem__, tokens))


def _word_id(word: str) -> int:
    data = word.encode()
    if len(data) > 7:
        data = _blake2b(data, digest_size=7).digest()
    return int.from_bytes(data)


@dataclass(frozen=True, slots=True)
class Sketch:
    """A bounded sample of a text's shingle hashes.

    ``threshold`` is the largest hash kept when the sample was truncated, None
    when every shingle was kept.
    """

    k: int
    hashes: frozenset[int]
    threshold: int | None

    def comparable(self, other: Iterable[int]) -> set[int]:
        """The hashes of ``other`` that this sketch could contain."""
        if self.threshold is None:
            return set(other)
        limit = self.threshold
        return {h for h in other if h <= limit}


def sketch(text: str, k: int = SHINGLE_WORDS, limit: int = MAX_SKETCH) -> Sketch | None:
    """The sketch of ``text``, or None when it has no words."""
    tokens = words(text)
    if not tokens:
        return None
    k_used = min(k, len(tokens))
    hashes = shingles(tokens, k_used)
    if len(hashes) <= limit:
        return Sketch(k_used, frozenset(hashes), None)
    kept = sorted(hashes)[:limit]
    return Sketch(k_used, frozenset(kept), kept[-1])


def containment(known: Sketch, candidate: set[int]) -> float:
    """Fraction of the sketched text's shingles found in ``candidate`` (same k)."""
    if not known.hashes:
        return 0.0
    return len(known.hashes & candidate) / len(known.hashes)


def overlap_fraction(text_shingles: set[int], other: Sketch | set[int]) -> float:
    """Fraction of a text's shingles that also occur in ``other``.

    With a truncated sketch only the text's shingles at or below the sketch's
    threshold are compared (the same uniform sample on both sides).
    """
    if isinstance(other, Sketch):
        pool = other.comparable(text_shingles)
        found = pool & other.hashes
    else:
        pool = text_shingles
        found = text_shingles & other
    if not pool:
        return 0.0
    return len(found) / len(pool)


def repeated_tokens(fraction: float, tokens: int) -> int:
    """Turn an overlap fraction into a token estimate (rounded, never negative)."""
    return max(0, round(fraction * tokens))


SURVIVAL_EXTRACTIVE = 0.8
"""Share of what a rewrite dropped that must survive in the new context for the rewrite
to count as extractive (the evidence kept, moved rather than lost)."""


def survival(dropped: Iterable[str], kept: Iterable[str]) -> float | None:
    """How much of the dropped texts survives in the kept ones, weighted by length.

    Each dropped text counts with its share of word 5-grams found among the kept
    texts' 5-grams (a text of fewer than five words: wholly there as a run of words,
    or not); the result is the length-weighted mean, None when nothing with words
    was dropped.
    """
    kept_words = [words(text) for text in kept]
    pool: set[int] = set()
    for tokens in kept_words:
        pool |= shingles(tokens, SHINGLE_WORDS)
    flat = " " + " ".join(" ".join(tokens) for tokens in kept_words) + " "
    total = found = 0.0
    for text in dropped:
        tokens = words(text)
        if not tokens:
            continue
        if len(tokens) < SHINGLE_WORDS:
            share = 1.0 if f" {' '.join(tokens)} " in flat else 0.0
        else:
            own = shingles(tokens, SHINGLE_WORDS)
            share = len(own & pool) / len(own)
        total += len(text)
        found += len(text) * share
    return found / total if total else None
