"""Fingerprints, shingle sketches and overlap estimates behind summary matching."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from otel_compaction.lineage import text as txt
from otel_compaction.lineage.tracker import compacted_tokens
from otel_compaction.model import CompactionObservation
from otel_compaction.semconv import CompactionSource


def numbered(start: int, n: int) -> str:
    """``n`` distinct words from ``start`` on."""
    return " ".join(f"t{i}" for i in range(start, start + n))


def test_fingerprint_ignores_whitespace_only() -> None:
    """Whitespace differences keep the fingerprint; a changed word changes it."""
    assert txt.fingerprint("a  b\n c ") == txt.fingerprint("a b c")
    assert txt.fingerprint("a b c") != txt.fingerprint("a b d")
    assert len(txt.fingerprint("x")) == 16


def test_sketch_is_bounded_and_overlap_stays_unbiased() -> None:
    """A truncated sketch keeps `limit` hashes and still estimates a half overlap near 0.5."""
    first = numbered(0, 4_000)
    sk = txt.sketch(first, limit=256)
    assert sk is not None
    assert len(sk.hashes) == 256
    assert sk.threshold == max(sk.hashes)
    half = txt.shingles(txt.words(numbered(2_000, 4_000)), sk.k)
    assert txt.overlap_fraction(half, sk) == pytest.approx(0.5, abs=0.12)


def test_short_and_empty_texts() -> None:
    """A text shorter than k is one shingle; a text without words has no sketch."""
    short = txt.sketch("fix the retry")
    assert short is not None
    assert (short.k, len(short.hashes)) == (3, 1)
    assert txt.sketch("  ... ") is None
    assert txt.containment(txt.Sketch(5, frozenset(), None), {1, 2}) == 0.0
    assert txt.overlap_fraction(set(), {1, 2}) == 0.0


def test_words_are_capped() -> None:
    """Very long texts are shingled on their first MAX_WORDS words only."""
    assert len(txt.words("w " * (txt.MAX_WORDS + 10))) == txt.MAX_WORDS


def test_repeated_tokens_rounds_and_never_goes_negative() -> None:
    """The token estimate is the rounded fraction of the summary's tokens."""
    assert txt.repeated_tokens(0.5, 801) == 400
    assert txt.repeated_tokens(-0.1, 100) == 0


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({"compacted_texts": ("x" * 40, "y" * 8)}, 12),
        ({"tokens_before": 100_000, "retained_tail_tokens": 30_000}, 70_000),
        ({"tokens_before": 100_000, "retained_tail_tokens": 30_000, "compacted_tokens": 61}, 61),
        ({"tokens_before": 100_000}, None),
    ],
)
def test_compacted_region_size(kw: dict[str, object], expected: int | None) -> None:
    """The compacted region is sized from its texts, else as measured, else before minus tail."""
    obs = CompactionObservation(source=CompactionSource.EXPLICIT, **kw)  # type: ignore[arg-type]
    assert compacted_tokens(obs) == expected


def test_shingle_hashes_are_the_same_in_every_process() -> None:
    """A truncated sketch keeps the same hashes under two different string-hash salts."""
    program = (
        "from otel_compaction.lineage import text as t\n"
        "words = ' '.join(f'w{i % 700} longer-word-{i % 13}' for i in range(3000))\n"
        "sk = t.sketch(words, limit=64)\n"
        "print(sorted(sk.hashes), sk.threshold)"
    )
    runs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True
        )
        runs.add(done.stdout)
    assert len(runs) == 1


def test_distinct_words_get_distinct_ids() -> None:
    """Short words map to their bytes (no collision); long words to a 56-bit digest."""
    words = ["a", "ab", "ba", "abcdefg", "abcdefgh", "abcdefgi", "é"]
    ids = txt.word_ids(words)
    assert len(set(ids)) == len(words)
    assert all(0 <= i < 2**56 for i in ids)
    assert txt.word_ids(["ab", "ab"]) == [ids[1], ids[1]]
