"""Settled compaction records, packed: a record's numbers, flags and enums in one ``bytes``.

A ``CompactionRecord`` is 31 slots (280 bytes with its object header), plus an int or a
float object for each size it knows (28 and 24 bytes) and a ``Cycle`` of four more ints:
about 500 bytes, kept twice by a conversation with two compactions, 100,000 times over
in the processor. A settled record no longer changes, so the lineage tracker keeps it as
a :class:`PackedRecord`: its strings and rarer objects as references (shared with the
observation they came from), every number, both flags and both enums in one ``bytes``
object (32-bit ints when they all fit, else 64-bit), about 190 bytes in all.
:meth:`PackedRecord.unpack` gives back a record equal to the one packed, field for
field, of the same types.

A record holding a value of another type than its field's (a bool or an ``int``
subclass where an int is expected, an int past 64 bits) is not packed: :func:`pack`
returns it as it is, and the tracker keeps it so.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable
from typing import Any, Final

from otel_compaction._bounded import BoundedMap
from otel_compaction.model import CompactionRecord, Cycle
from otel_compaction.semconv import CompactionMode, CompactionSource

_INTS: Final = (
    "turn_index",
    "tokens_before",
    "tokens_after",
    "summary_tokens",
    "retained_tail_tokens",
    "duplicated_tokens",
    "carried_over_tokens",
    "generation",
    "window",
    "tokens_after_reported",
    "fixed_tokens",
    "compacted_tokens",
)
"""The int fields (None when absent), in the order they are packed; bits 0-11."""
_CYCLE_BIT: Final = 1 << 12
"""Set when the record has a cycle: its four ints follow the fields'."""
_FLOATS: Final = ("token_fraction", "schema_coverage", "timestamp", "growth_per_turn")
"""The float fields (None when absent), packed after the ints; bits 13-16."""
_FLOAT_SHIFT: Final = 13
_FAILED: Final = 1 << 17
_ASSUMED: Final = 1 << 18
_WIDE: Final = 1 << 19
"""The ints are 64-bit (one of them does not fit in 32)."""
_SOURCE_SHIFT: Final = 20
_MODE_SHIFT: Final = 24
_LAYOUT_BITS: Final = (1 << 20) - 1 - _FAILED - _ASSUMED
"""The bits that decide where the values lie in the bytes."""

_SOURCES: Final = tuple(CompactionSource)
_MODES: Final = tuple(CompactionMode)
_SOURCE_INDEX: Final = {source: i for i, source in enumerate(_SOURCES)}
_MODE_INDEX: Final = {mode: i for i, mode in enumerate(_MODES)}
assert len(_SOURCES) <= 16, "CompactionSource outgrew its 4 bits"
assert len(_MODES) <= 16, "CompactionMode outgrew its 4 bits"

_HEAD: Final = struct.Struct("<I")
_MIN32, _MAX32 = -(2**31), 2**31 - 1
_MIN64, _MAX64 = -(2**63), 2**63 - 1

_layouts: BoundedMap[int, tuple[struct.Struct, Gather]] = BoundedMap(256)

_NAMES: Final = tuple(CompactionRecord.__dataclass_fields__)


class PackedRecord:
    """A settled ``CompactionRecord`` in about 190 bytes (see the module docstring).

    The ids and the summary's fingerprint are read without unpacking (the tracker's scans
    use them); anything else through :meth:`unpack`.
    """

    __slots__ = (
        "_numbers",
        "_rare",
        "compaction_id",
        "parent_id",
        "root_id",
        "summary_fingerprint",
        "summary_template",
        "trigger",
    )

    def __init__(self, record: CompactionRecord, numbers: bytes) -> None:
        self.compaction_id = record.compaction_id
        self.parent_id = record.parent_id
        self.root_id = record.root_id
        self.summary_fingerprint = record.summary_fingerprint
        self.summary_template = record.summary_template
        self.trigger = record.trigger
        self._numbers = numbers
        missing, error, summarizer = record.missing_fields, record.error, record.summarizer
        plain = type(missing) is tuple and not missing and error is None and summarizer is None
        self._rare = None if plain else (missing, error, summarizer)

    @property
    def mode(self) -> CompactionMode:
        """The record's mode (without unpacking it)."""
        head: int = _HEAD.unpack_from(self._numbers)[0]
        return _MODES[head >> _MODE_SHIFT & 15]

    @property
    def failed(self) -> bool:
        """Whether the compaction failed (without unpacking it)."""
        return bool(_HEAD.unpack_from(self._numbers)[0] & _FAILED)

    def unpack(self, conversation_id: str) -> CompactionRecord:
        """The record packed, of the conversation ``conversation_id``."""
        data = self._numbers
        head: int = _HEAD.unpack_from(data)[0]
        layout, gather = _layout(head & _LAYOUT_BITS)
        numbers = layout.unpack_from(data, 4)
        cycle = Cycle(*numbers[-4:]) if head & _CYCLE_BIT else None
        values = (
            *numbers, self.compaction_id, conversation_id, _SOURCES[head >> _SOURCE_SHIFT & 15],
            _MODES[head >> _MODE_SHIFT & 15], self.trigger, self.parent_id, self.root_id, cycle,
            bool(head & _FAILED), self.summary_fingerprint, *(self._rare or _NO_RARE),
            bool(head & _ASSUMED), self.summary_template, None,
        )  # fmt: skip
        return CompactionRecord(*gather(values))


_OBJECTS: Final = (
    "compaction_id", "conversation_id", "source", "mode", "trigger", "parent_id", "root_id",
    "cycle", "failed", "summary_fingerprint", "missing_fields", "error", "summarizer",
    "lineage_assumed", "summary_template",
)  # fmt: skip
"""The other fields, in the order :meth:`PackedRecord.unpack` lists their values after the
numbers (and a None after them, the value of an absent number)."""
_NO_RARE: Final = ((), None, None)
assert sorted((*_INTS, *_FLOATS, *_OBJECTS)) == sorted(_NAMES), "a field is not packed"

Gather = Callable[[tuple[Any, ...]], tuple[Any, ...]]


def _layout(bits: int) -> tuple[struct.Struct, Gather]:
    """:func:`_make_layout`, memoized (records of one source share a handful of layouts)."""
    return _layouts.cached(bits, _make_layout)


def _make_layout(bits: int) -> tuple[struct.Struct, Gather]:
    """Where the values of a record with these layout bits lie after the head: the
    ``Struct`` (the ints, the floats; a cycle's four ints last), and what picks the record's
    fields, in order, out of the values :meth:`PackedRecord.unpack` lists."""
    ints = [name for i, name in enumerate(_INTS) if bits >> i & 1]
    floats = [name for i, name in enumerate(_FLOATS) if bits >> (_FLOAT_SHIFT + i) & 1]
    width = "q" if bits & _WIDE else "i"
    cycle = width * 4 if bits & _CYCLE_BIT else ""
    layout = struct.Struct(f"<{width * len(ints)}{'d' * len(floats)}{cycle}")
    at = {name: i for i, name in enumerate((*ints, *floats))}
    count = len(at) + len(cycle)
    at.update((name, count + i) for i, name in enumerate(_OBJECTS))
    absent = count + len(_OBJECTS)
    return layout, operator.itemgetter(*(at.get(name, absent) for name in _NAMES))


def pack(record: CompactionRecord) -> CompactionRecord | PackedRecord:
    """``record`` packed; as it is when one of its values is not of its field's type."""
    found = _values(record)
    flags = _flags(record)
    if found is None or flags is None:
        return record
    head, values = found
    numbers = [v for v in values if type(v) is int]
    if not all(_MIN32 <= v <= _MAX32 for v in numbers):
        if not all(_MIN64 <= v <= _MAX64 for v in numbers):
            return record
        head |= _WIDE
    layout, _ = _layout(head & _LAYOUT_BITS)
    return PackedRecord(record, _HEAD.pack(head | flags) + layout.pack(*values))


_GET_NUMBERS: Final = operator.attrgetter(*_INTS, *_FLOATS)
_KINDS: Final = (int,) * len(_INTS) + (float,) * len(_FLOATS)
_GET_CYCLE: Final = operator.attrgetter(
    "interval_turns", "new_content_tokens", "net_growth_tokens", "residual_tokens"
)


def _values(record: CompactionRecord) -> tuple[int, list[int | float]] | None:
    """The head's layout bits and the values to pack, in the layout's order (the ints, the
    floats, a cycle's four ints); None when one is not of its field's type."""
    head, values = 0, []
    for i, (value, kind) in enumerate(zip(_GET_NUMBERS(record), _KINDS, strict=True)):
        if value is not None:
            if type(value) is not kind:
                return None
            head |= 1 << (i if i < len(_INTS) else _FLOAT_SHIFT + i - len(_INTS))
            values.append(value)
    cycle = record.cycle
    if cycle is not None:
        if type(cycle) is not Cycle:
            return None
        tail = _GET_CYCLE(cycle)
        if any(type(v) is not int for v in tail):
            return None
        head |= _CYCLE_BIT
        values.extend(tail)
    return head, values


def _flags(record: CompactionRecord) -> int | None:
    """The head's bits for the record's flags and enums; None when one is of another type."""
    kinds = (
        (record.source, CompactionSource),
        (record.mode, CompactionMode),
        (record.failed, bool),
        (record.lineage_assumed, bool),
    )
    if not all(_exactly(value, kind) for value, kind in kinds):
        return None  # a str equal to a member's value is no member
    flags = _SOURCE_INDEX[record.source] << _SOURCE_SHIFT | _MODE_INDEX[record.mode] << _MODE_SHIFT
    return flags | (_FAILED if record.failed else 0) | (_ASSUMED if record.lineage_assumed else 0)


def _exactly(value: object, kind: type) -> bool:
    return type(value) is kind


def unpacked(record: CompactionRecord | PackedRecord, conversation_id: str) -> CompactionRecord:
    """``record`` as a ``CompactionRecord`` (unpacked when packed, of the conversation
    ``conversation_id``)."""
    return record.unpack(conversation_id) if isinstance(record, PackedRecord) else record
