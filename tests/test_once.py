"""Run-once flags: exactly one claim wins, however many threads race for it."""

from __future__ import annotations

import threading
from collections.abc import Callable

from otel_compaction._once import Once, OncePerKey


def _race(claim: Callable[[], bool], threads: int = 16) -> list[bool]:
    start = threading.Barrier(threads)
    results: list[bool] = []
    lock = threading.Lock()

    def run() -> None:
        start.wait()
        won = claim()
        with lock:
            results.append(won)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return results


def test_once_is_claimed_by_exactly_one_of_racing_threads() -> None:
    """Sixteen threads claim one flag at once: one wins, and the flag says it was claimed."""
    assert not Once().claimed
    once = Once()
    assert sorted(_race(once.claim)) == [False] * 15 + [True]
    assert once.claimed
    assert not once.claim()


def test_once_per_key_claims_each_key_once_up_to_the_limit() -> None:
    """Each key wins once; past the limit no new key wins and nothing more is kept."""
    keys = OncePerKey(2)
    assert sorted(_race(lambda: keys.claim("a"))) == [False] * 15 + [True]
    assert len(keys) == 1
    assert keys.claim("b")
    assert keys.full
    assert not keys.claim("c")
    assert not keys.claim("b")
    assert len(keys) == 2


def test_once_per_key_without_limit_keeps_every_key() -> None:
    """Without a limit every distinct key wins exactly once."""
    keys = OncePerKey()
    assert [keys.claim(n % 50) for n in range(100)] == [True] * 50 + [False] * 50
    assert not keys.full
