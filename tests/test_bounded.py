"""The bounded map: at most ``limit`` entries, the least recently used forgotten first."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from otel_compaction import _bounded
from otel_compaction._bounded import BoundedMap, RecentKeys

PACKAGE = Path(_bounded.__file__).resolve().parent


def test_the_least_recently_used_entry_goes_first() -> None:
    """A read refreshes an entry, so the one neither read nor written longest is evicted."""
    lru: BoundedMap[str, int] = BoundedMap(2)
    assert lru.put("a", 1) == []
    assert lru.put("b", 2) == []
    assert lru.get("a") == 1
    assert lru.put("c", 3) == [2]  # b was the least recently used
    assert lru.keys() == ["a", "c"]
    assert "b" not in lru
    assert lru.get("b") is None


def test_peek_and_oldest_do_not_refresh() -> None:
    """``peek`` and ``oldest`` read without changing what is evicted next."""
    lru: BoundedMap[str, int] = BoundedMap(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.peek("a") == 1
    assert lru.oldest() == ("a", 1)
    assert lru.put("c", 3) == [1]


def test_cached_computes_once_per_key_even_for_none() -> None:
    """A memo computes each key once while it is kept, a None result included."""
    calls: list[str] = []

    def compute(key: str) -> int | None:
        calls.append(key)
        return None if key == "none" else len(key)

    lru: BoundedMap[str, int | None] = BoundedMap(8)
    assert [lru.cached(k, compute) for k in ("none", "abc", "none", "abc")] == [None, 3, None, 3]
    assert calls == ["none", "abc"]


def test_pop_and_drain_return_what_was_kept() -> None:
    """``pop`` removes one entry, ``drain`` all of them, least recent first."""
    lru: BoundedMap[int, str] = BoundedMap(4)
    for n in range(4):
        lru.put(n, str(n))
    assert lru.pop(1) == "1"
    assert lru.pop(1) is None
    assert lru.drain() == ["0", "2", "3"]
    assert len(lru) == 0
    assert lru.oldest() is None


def test_a_limit_of_zero_keeps_nothing() -> None:
    """With limit 0 every insert is evicted at once and returned."""
    lru: BoundedMap[str, int] = BoundedMap(0)
    assert lru.put("a", 1) == [1]
    assert len(lru) == 0


def test_racing_threads_keep_the_bound_and_lose_no_eviction() -> None:
    """Eight threads inserting at once leave at most ``limit`` entries, and every value
    inserted is either still kept or was returned as evicted to exactly one caller."""
    lru: BoundedMap[int, int] = BoundedMap(64)
    evicted: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def run(base: int) -> None:
        start.wait()
        for n in range(base, base + 2000):
            lru.get(n - 1)
            out = lru.put(n, n)
            with lock:
                evicted.extend(out)

    workers = [threading.Thread(target=run, args=(t * 10_000,)) for t in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(lru) <= 64
    assert sorted(evicted + lru.values()) == sorted(
        n for t in range(8) for n in range(t * 10_000, t * 10_000 + 2000)
    )


def test_a_sized_map_keeps_its_values_within_max_bytes() -> None:
    """Bounded in bytes too, a map forgets the least recently used values until the rest
    fit, and its byte count follows every put, replacement, pop and drain."""
    lru: BoundedMap[str, str] = BoundedMap(10, max_bytes=10, size=len)
    assert lru.put("a", "x" * 4) == []
    assert lru.put("b", "y" * 4) == []
    assert lru.get("a") == "x" * 4
    assert lru.put("c", "z" * 4) == ["y" * 4]  # b was the least recently used
    assert (lru.keys(), lru.nbytes) == (["a", "c"], 8)
    assert lru.put("a", "x") == []  # replaced: its old size no longer counts
    assert lru.nbytes == 5
    assert lru.pop("c") == "z" * 4
    assert lru.nbytes == 1
    assert lru.drain() == ["x"]
    assert lru.nbytes == 0


def test_a_value_larger_than_max_bytes_is_not_kept() -> None:
    """A value over the byte bound by itself is returned as evicted, takes its key's old
    value with it, and pushes out nothing else."""
    lru: BoundedMap[str, str] = BoundedMap(10, max_bytes=10, size=len)
    lru.put("small", "s")
    lru.put("huge", "h")
    assert lru.put("huge", "h" * 11) == ["h" * 11]
    assert (lru.items(), lru.nbytes) == ([("small", "s")], 1)


def test_max_bytes_needs_a_size() -> None:
    """A byte bound without a way to size values (or the reverse) is refused."""
    with pytest.raises(ValueError, match="together"):
        BoundedMap(4, max_bytes=10)


def _lru_caches() -> list[tuple[str, ast.expr]]:
    """Each ``lru_cache`` (or ``cache``) decorator of the package: the module, dotted below
    ``otel_compaction``, and the decorator."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found += [(module, d) for d in node.decorator_list if _is_cache(d)]
    return found


def _is_cache(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return name in {"lru_cache", "cache"}


def test_every_lru_cache_is_bounded_and_named_in_the_bounded_module() -> None:
    """Each ``functools`` memo left in the package has a ``maxsize`` and its module is one
    that ``_bounded``'s docstring gives the reason for; the count there is the count here."""
    caches = _lru_caches()
    doc = " ".join((_bounded.__doc__ or "").split())
    assert len(caches) == 10
    assert "remains in ten places" in doc
    for module, decorator in caches:
        assert f"``{module}" in doc, module
        assert isinstance(decorator, ast.Call), module
        assert [k.arg for k in decorator.keywords] == ["maxsize"], module
        size = decorator.keywords[0].value
        assert isinstance(size, ast.Constant), module
        assert isinstance(size.value, int), module


@given(
    st.integers(min_value=0, max_value=9),
    # Below 2**61 - 1 a key is its own hash: distinct keys, distinct fingerprints.
    st.lists(st.integers(0, 40) | st.integers(0, 2**61 - 2), max_size=300),
)
def test_recent_keys_answer_as_a_set_and_a_queue_of_the_newest_would(
    limit: int, keys: list[int]
) -> None:
    """The packed de-duplication memory says "new" exactly when a set of the ``limit``
    newest distinct keys (oldest forgotten first) would, however removals shift its table."""
    packed = RecentKeys(limit)
    kept: dict[int, None] = {}
    for key in keys:
        new = key not in kept
        if new and limit:
            kept[key] = None
            if len(kept) > limit:
                del kept[next(iter(kept))]
        assert packed.add(key) is new
        assert len(packed) == len(kept)
