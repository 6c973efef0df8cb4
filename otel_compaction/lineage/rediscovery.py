"""Rediscovery: the work an agent does again after a compaction.

After a lossy compaction an agent often repeats tool calls it made before it (the
same tool with the same input): it re-reads the files and re-fetches the documents
whose content the summary dropped. :class:`RediscoveryTracker` measures that per
compaction over a horizon of later calls, and the same measure after the
conversation's ordinary points as its own baseline, so the excess is what the
compaction cost (docs/concepts.md#rediscovery).

A call is known by its key, a stable hash (BLAKE2b, 8 bytes) of the tool's name and
its canonical input (JSON with sorted keys; other text as it is): the same in every
process, and never the text itself. A call in a horizon is *rediscovery* when a call
with its key was made before the point the horizon starts at, except:

- a habit: the agent had already repeated that key before the point (status
  commands, listings, polling repeat with or without a compaction);
- a changed file: a call naming a path (``file_path``, ``path``...) that an edit
  call touched since the point: reading a file again after editing it checks the
  edit, which is new work. (An edit made before the point does not excuse a
  re-read after it: the agent knew the file, its read and its own edits, until
  the compaction dropped them.)
- a second repeat of the same key in one horizon (counted once).

A horizon covers the calls made in ``horizon`` turns from its start (the first
call that sees the compacted context), or fewer when the next compaction or the
end of the conversation comes first. The tokens of a repeated call are the size
of its result, read on the next turn (``TurnObservation.tool_output_tokens``, in
the order of the calls); when the results cannot be paired with the calls, the
calls still count and their tokens do not.

A source that learns a response's calls only with the next request (an agent's own log
events: each call's ``tool_result`` comes after the ``api_request`` of the response that
asked for it) marks their key texts late (``late_key_text``): the tracker counts them as
calls of the previous turn, with the results that come with them, before it closes or
opens anything on this one, so the calls of the last response before a compaction stay
calls made before it.

Baseline points are the turns that are multiples of ``horizon`` with no
compaction horizon open; a baseline horizon into which a compaction falls is
dropped. Memory is bounded in bytes: the ``MAX_KEYS`` most recently first-seen keys
in three packed arrays (16 bytes a key, 4 KiB at most), and the last ``MAX_PATHS``
edited paths in two (12 bytes a path). A call older than that is forgotten, so it no
longer counts as repeated: what an agent needs again after a compaction is mostly what
it used recently.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from otel_compaction.model import Rediscovery, RediscoveryBaseline

MAX_KEYS: Final = 256
"""Keys remembered per conversation (an 8-byte hash and two 4-byte turn numbers each)."""
MAX_PATHS: Final = 64
"""Edited paths remembered per conversation."""
PATH_FIELDS: Final = ("file_path", "path", "filename", "notebook_path", "file")
"""Input fields that name the file a call reads or edits."""
EDIT_TOOLS: Final = frozenset(
    {"edit", "multiedit", "write", "notebookedit", "str_replace_based_edit_tool", "apply_patch"}
)
"""Tool names (lower case) that change the file their input names."""
TOP_TOOLS: Final = 3
"""How many tools a result names (the ones whose redone results cost the most)."""


Key = tuple[int, int | None]
"""A call's key and the key of the path its input names (None when none)."""

LATE_MARK: Final = "<"
"""Prefix of a key text whose call the previous response asked for (``late_key_text``)."""


class LateKey(tuple[int, int | None]):
    """The key of a call the previous turn's response asked for, known one turn late."""

    __slots__ = ()


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def call_key(name: str, arguments: str | None) -> Key:
    """The key of a call and the key of the path its input names (None when none).

    Args:
        name: the tool's name.
        arguments: its input as JSON text or a command line; None when unknown.
    """
    parsed: object = None
    if arguments is not None:
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
    if isinstance(parsed, (dict, list)):
        canonical = json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    else:
        canonical = arguments or ""
    path = None
    if isinstance(parsed, dict):
        for key in PATH_FIELDS:
            value = parsed.get(key)
            if isinstance(value, str) and value:
                path = _hash("path\0" + value)
                break
    return _hash(name + "\0" + canonical), path


def key_text(name: str, arguments: str | None) -> str | None:
    """A call's key as span attributes carry it (``compaction.turn.tool_call_keys``): 16
    hex digits, then ``:`` and the path's 16 when the input names one; None when the input
    is unknown."""
    if arguments is None:
        return None
    key, path = call_key(name, arguments)
    return f"{key:016x}" if path is None else f"{key:016x}:{path:016x}"


def late_key_text(name: str, arguments: str | None) -> str:
    """The key text of a call the previous turn's response asked for, learnt with this turn
    (``LATE_MARK`` and its ``key_text``); an empty string when its input is unknown."""
    text = key_text(name, arguments)
    return "" if text is None else LATE_MARK + text


def parse_key_text(text: str) -> tuple[int, int | None] | None:
    """The key and path key of a ``key_text`` (a ``LateKey`` for a ``late_key_text``);
    None for a malformed one."""
    late = text.startswith(LATE_MARK)
    head, _, tail = text.removeprefix(LATE_MARK).partition(":")
    try:
        key = int(head, 16), (int(tail, 16) if tail else None)
    except ValueError:
        return None
    return LateKey(key) if late else key


def resolve_keys(
    calls: Sequence[str], arguments: Sequence[str | None], key_texts: Sequence[str] = ()
) -> list[Key | None]:
    """The key of each call: from the span's key texts when they are given (one per call),
    else from the inputs; None where neither is known."""
    if key_texts and len(key_texts) == len(calls):
        return [parse_key_text(text) if text else None for text in key_texts]
    args = (list(arguments) + [None] * len(calls))[: len(calls)]
    return [None if a is None else call_key(n, a) for n, a in zip(calls, args, strict=True)]


@dataclass(slots=True)
class _Keys:
    """Keys with their first and second turn, in three packed arrays sorted by key."""

    keys: array[int] = field(default_factory=lambda: array("Q"))
    first: array[int] = field(default_factory=lambda: array("I"))
    second: array[int] = field(default_factory=lambda: array("I"))

    def get(self, key: int) -> tuple[int, int] | None:
        i = bisect.bisect_left(self.keys, key)
        if i < len(self.keys) and self.keys[i] == key:
            return self.first[i], self.second[i]
        return None

    def seen(self, key: int, turn: int) -> None:
        """Remember a call of ``key`` at ``turn`` (the oldest key goes when full)."""
        keys = self.keys
        i = bisect.bisect_left(keys, key)
        if i < len(keys) and keys[i] == key:
            if not self.second[i] and turn != self.first[i]:
                self.second[i] = turn
            return
        if len(keys) >= MAX_KEYS:
            oldest = self.first.index(min(self.first))
            for column in (keys, self.first, self.second):
                del column[oldest]
            i = bisect.bisect_left(keys, key)
        keys.insert(i, key)
        self.first.insert(i, turn)
        self.second.insert(i, 0)


@dataclass(slots=True)
class _Edited:
    """Edited paths with the last turn an edit named each, oldest first, in two packed
    arrays (12 bytes a path, where a dict of ints took about 110)."""

    paths: array[int] = field(default_factory=lambda: array("Q"))
    turns: array[int] = field(default_factory=lambda: array("I"))

    def get(self, path: int) -> int:
        """The last turn an edit named ``path``; -1 when it is not remembered."""
        try:
            return self.turns[self.paths.index(path)]
        except ValueError:
            return -1

    def edit(self, path: int, turn: int) -> None:
        """Remember an edit of ``path`` at ``turn`` as the newest (the oldest goes when full)."""
        paths, turns = self.paths, self.turns
        try:
            i = paths.index(path)
        except ValueError:
            pass
        else:
            del paths[i], turns[i]
        paths.append(path)
        turns.append(turn)
        if len(paths) > MAX_PATHS:
            del paths[0], turns[0]


@dataclass(slots=True)
class _Horizon:
    start: int
    compaction_id: str | None
    calls: int = 0
    tokens: int = 0
    turns: int = 0
    last_turn: int = 0
    seen: frozenset[int] = frozenset()
    by_tool: dict[str, int] = field(default_factory=dict)

    @property
    def ident(self) -> HorizonId:
        return self.start, self.compaction_id

    def close(self, end_turn: int) -> Rediscovery:
        ranked = sorted(self.by_tool.items(), key=lambda kv: (-kv[1], kv[0]))
        return Rediscovery(
            self.start,
            self.compaction_id,
            self.calls,
            self.tokens,
            self.turns,
            max(0, end_turn - self.start),
            tuple(name for name, _ in ranked[:TOP_TOOLS]),
        )


def _fields(horizon: _Horizon) -> tuple[Any, ...]:
    """A horizon's fields in order (its tool counts copied)."""
    h = horizon
    return (h.start, h.compaction_id, h.calls, h.tokens, h.turns, h.last_turn, h.seen,
            dict(h.by_tool))  # fmt: skip


def _horizon(fields: Sequence[Any]) -> _Horizon:
    """The horizon :func:`_fields` read (its tool counts copied)."""
    start, compaction_id, calls, tokens, turns, last_turn, seen, by_tool = fields
    return _Horizon(start, compaction_id, calls, tokens, turns, last_turn, seen, dict(by_tool))


HorizonId = tuple[int, str | None]
"""A horizon's start turn and compaction (None for a baseline point)."""


@dataclass(slots=True)
class RediscoveryTracker:
    """Rediscovery of one conversation, fed turn by turn (see the module docstring).

    A dataclass of plain values, so that a processor's state snapshot can hold it.

    Args:
        horizon: the turns a horizon covers (``Settings.rediscovery_horizon``).
    """

    horizon: int
    _keys: _Keys = field(default_factory=_Keys)
    _edited: _Edited = field(default_factory=_Edited)
    """path key -> the last turn an edit call named it."""
    _horizons: list[_Horizon] = field(default_factory=list)
    _pending: list[tuple[str, tuple[HorizonId, ...]]] = field(default_factory=list)
    """The last turn's calls: tool name and the horizons that counted it."""
    _closing: list[tuple[_Horizon, int]] = field(default_factory=list)
    """Horizons a compaction ended, with their end turn, waiting for the results of
    their last calls (they come with the first call after the compaction)."""
    _baseline: RediscoveryBaseline = field(default_factory=RediscoveryBaseline)

    STATE_FIELDS: ClassVar = (
        "baseline",
        "closing",
        "edited",
        "horizon",
        "horizons",
        "keys",
        "pending",
    )
    """The names of :meth:`state`'s values."""

    def __post_init__(self) -> None:
        self.horizon = max(1, self.horizon)

    def state(self) -> dict[str, Any]:
        """What the tracker remembers, as plain values (a copy): keys as three arrays (key,
        first turn, second turn), edited paths as two (path key, turn; oldest first),
        horizons as tuples of their fields; :meth:`restore`
        takes it."""
        k = self._keys
        return {
            "baseline": self._baseline,
            "closing": tuple((_fields(h), end) for h, end in self._closing),
            "edited": (self._edited.paths[:], self._edited.turns[:]),
            "horizon": self.horizon,
            "horizons": tuple(map(_fields, self._horizons)),
            "keys": (k.keys[:], k.first[:], k.second[:]),
            "pending": tuple(self._pending),
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Take what :meth:`state` returned."""
        baseline, closing, edited, horizon, horizons, keys, pending = map(
            state.__getitem__, self.STATE_FIELDS
        )
        self._baseline, self.horizon = baseline, horizon
        self._edited = _Edited(*(column[:] for column in edited))
        self._closing = [(_horizon(h), end) for h, end in closing]
        self._horizons = [_horizon(h) for h in horizons]
        self._keys = _Keys(*(column[:] for column in keys))
        self._pending = list(pending)

    @property
    def baseline(self) -> RediscoveryBaseline:
        """The baseline so far."""
        return self._baseline

    def observe_compaction(self, compaction_id: str, turn: int) -> None:
        """A compaction whose first call after it will be ``turn``: ends what is open (a
        baseline horizon is dropped; an earlier compaction's closes on the next call, which
        brings the results of its last calls) and opens the compaction's horizon."""
        self._closing.extend((h, turn) for h in self._horizons if h.compaction_id is not None)
        self._horizons = [_Horizon(turn, compaction_id)]

    def observe_turn(
        self,
        turn: int,
        calls: Sequence[str],
        keys: Sequence[Key | None],
        result_tokens: Sequence[int],
    ) -> tuple[Rediscovery, ...]:
        """One call: the results of the last call's tools, then this call's tools (their
        names and keys, ``resolve_keys``). Returns the horizons it closed (compactions' and
        baseline points' alike). Late keys (``LateKey``) are the previous turn's calls, with
        ``result_tokens`` their own results."""
        if LateKey in map(type, keys):  # no generator: every turn
            self._late(turn - 1, calls, keys, result_tokens)
            calls, keys, result_tokens = (), (), ()
        self._pair(result_tokens)
        closed = tuple(h.close(end) for h, end in self._closing)
        self._closing = []
        closed += self._close(lambda h: turn >= h.start + self.horizon, turn, keep_baseline=True)
        if turn % self.horizon == 0 and not self._horizons:
            self._horizons.append(_Horizon(turn, None))
        known = (list(keys) + [None] * len(calls))[: len(calls)]
        self._pending = [self._call(turn, n, k) for n, k in zip(calls, known, strict=True)]
        return closed

    def finish(self, turn: int) -> tuple[Rediscovery, ...]:
        """The end of the conversation: compaction horizons close short; baselines drop."""
        closed = tuple(h.close(end) for h, end in self._closing)
        closed += self._close(lambda h: True, turn + 1, keep_baseline=False)
        self._closing, self._pending = [], []
        return closed

    def _late(
        self, turn: int, calls: Sequence[str], keys: Sequence[Key | None], tokens: Sequence[int]
    ) -> None:
        """The previous turn's calls and their results, counted in the horizons that turn
        was in (those a compaction since is closing among them), never in one opened since."""
        opened = [h for h in self._horizons if h.start > turn]
        then = [h for h in self._horizons if h.start <= turn]
        self._horizons = then + [h for h, _ in self._closing if h.start <= turn]
        known = (list(keys) + [None] * len(calls))[: len(calls)]
        self._pending = [self._call(turn, n, k) for n, k in zip(calls, known, strict=True)]
        self._horizons = then + opened
        self._pair(tokens)
        self._pending = []

    def _pair(self, result_tokens: Sequence[int]) -> None:
        pending = self._pending
        if not pending or len(result_tokens) != len(pending):
            return
        live = {h.ident: h for h in self._horizons}
        live.update((h.ident, h) for h, _ in self._closing)
        for (name, idents), tokens in zip(pending, result_tokens, strict=True):
            for ident in idents:
                horizon = live.get(ident)
                if horizon is not None:
                    horizon.tokens += tokens
                    horizon.by_tool[name] = horizon.by_tool.get(name, 0) + tokens

    def _call(self, turn: int, name: str, known: Key | None) -> tuple[str, tuple[HorizonId, ...]]:
        if known is None:
            return name, ()  # an unknown input matches nothing
        key, path = known
        earlier = self._keys.get(key)
        counted = tuple(h for h in self._horizons if self._redone(h, key, earlier, path))
        for horizon in counted:
            horizon.seen = horizon.seen | {key}
            horizon.calls += 1
            if horizon.last_turn != turn:
                horizon.turns += 1
                horizon.last_turn = turn
            horizon.by_tool.setdefault(name, 0)
        self._keys.seen(key, turn)
        if path is not None and name.lower() in EDIT_TOOLS:
            self._edited.edit(path, turn)
        return name, tuple(h.ident for h in counted)

    def _redone(
        self, horizon: _Horizon, key: int, earlier: tuple[int, int] | None, path: int | None
    ) -> bool:
        if earlier is None or key in horizon.seen:
            return False
        first, second = earlier
        if first >= horizon.start:
            return False  # first made inside the horizon: not work done before the point
        if second and second < horizon.start:
            return False  # a habit: repeated before the point already
        # The file changed since the point (the agent's own edit): reading it checks the edit.
        return path is None or self._edited.get(path) < horizon.start

    def _close(
        self, due: Callable[[_Horizon], bool], end_turn: int, *, keep_baseline: bool
    ) -> tuple[Rediscovery, ...]:
        closed: list[Rediscovery] = []
        still: list[_Horizon] = []
        for horizon in self._horizons:
            if not due(horizon):
                still.append(horizon)
                continue
            if horizon.compaction_id is None:
                if keep_baseline:
                    self._baseline = self._baseline.plus(horizon.close(end_turn))
                continue
            closed.append(horizon.close(end_turn))
        self._horizons = still
        return tuple(closed)
