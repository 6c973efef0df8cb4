"""The engine's per-conversation state as JSON values, through the engine's public ``state()``.

What a conversation's analyzer knows is :meth:`ConversationAnalyzer.state`: plain
values, its trackers' as their own ``state()`` (the pressure and phase trackers,
the lineage tracker, the rediscovery tracker). :func:`encode_analyzer` encodes
that value as a list in ``STATE_FIELDS`` order (a tracker's state a list in its own:
the names are in the digest, not on every line); the values in it may only be of the
types below.
:func:`decode_state` turns the JSON back into values, and :func:`apply_state`
hands them to :meth:`ConversationAnalyzer.restore` on a freshly built analyzer
of the same id and settings. This module reads and writes no private attribute
of the engine's classes (``tests/processor/test_snapshot_codec.py`` checks it).

Nothing goes stale silently when the engine changes: :func:`engine_digest`
hashes the state classes' ``STATE_FIELDS`` (the names of their ``state()``
values), the value classes' field names (in order), enum members and the
platform facts the values depend on, and a snapshot whose digest differs is
foreign (the processor starts clean). A ``state()`` value of a type not listed
here makes :func:`encode_analyzer` raise ``SnapshotError`` naming it (the
property test of ``tests/processor/test_snapshot_codec.py`` fails) until it is
listed. A state value that keeps its name but changes its meaning must bump
:data:`STATE_REVISION`.

Value encoding (no code is ever run to read it: only the listed classes are built):

=====================================  =========================================================
Python                                 JSON
=====================================  =========================================================
None, bool, int, str                   as is
float                                  as is when finite, else ``{"$f": "nan" | "inf" | "-inf"}``
tuple                                  a list
list                                   ``{"$l": [...]}``
bytes                                  ``{"$b": "<base64>"}``
frozenset of 64-bit ints               ``{"$q": "<base64 of the sorted little-endian int64s>"}``
other frozenset / set                  ``{"$s": [...]}`` (sorted by their JSON text)
``array.array``                        ``{"$a": "<typecode>", "v": [...]}``
dict                                   ``{"$d": [[key, value], ...]}`` (order kept)
a listed enum                          ``{"$e": "<class>", "v": <value>}``
a listed dataclass                     ``{"$o": "<class>", "v": [<fields in order>]}``
=====================================  =========================================================
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import math
import struct
import sys
from array import array
from collections.abc import Callable
from enum import Enum
from typing import Any, Final

from otel_compaction.engine import ConversationAnalyzer
from otel_compaction.lineage import text
from otel_compaction.lineage.rediscovery import RediscoveryTracker
from otel_compaction.lineage.tracker import LineageTracker
from otel_compaction.model import (
    CompactionRecord,
    Cycle,
    PhaseTransition,
    Pressure,
    RediscoveryBaseline,
    SummarizerCost,
)
from otel_compaction.semconv import CompactionMode, CompactionSource, FindingKind, PhaseSource
from otel_compaction.signals.phase import PhaseTracker
from otel_compaction.signals.pressure import PressureTracker

STATE_REVISION: Final = 2
"""Bump when a state value keeps its name but changes meaning. 2: the engine's public
``state()`` (revision 1 walked the classes' slots: such snapshots are foreign, and the
processor starts clean)."""

STATE_CLASSES: Final = (
    ConversationAnalyzer,
    PressureTracker,
    PhaseTracker,
    LineageTracker,
    RediscoveryTracker,
)
"""The engine's state objects: a snapshot holds what their ``state()`` returns."""

VALUE_CLASSES: Final = (
    Pressure,
    PhaseTransition,
    CompactionRecord,
    Cycle,
    SummarizerCost,
    text.Sketch,
    RediscoveryBaseline,
)
"""Dataclasses rebuilt from their fields."""

ENUMS: Final = (PhaseSource, CompactionSource, CompactionMode, FindingKind)

_INT64 = struct.Struct("<q")
_MIN64, _MAX64 = -(2**63), 2**63 - 1


class SnapshotError(ValueError):
    """A value cannot be encoded, or the JSON is not a state this engine wrote."""


def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


_VALUES: Final = {cls.__name__: (cls, _field_names(cls)) for cls in VALUE_CLASSES}
_ENUMS: Final[dict[str, type[Enum]]] = {cls.__name__: cls for cls in ENUMS}


def engine_digest() -> str:
    """16 hex digits naming the state layout this engine reads and writes."""
    shape = {
        "revision": STATE_REVISION,
        "states": sorted([cls.__name__, list(cls.STATE_FIELDS)] for cls in STATE_CLASSES),
        "values": [[name, fields] for name, (_, fields) in sorted(_VALUES.items())],
        "enums": [[name, [m.value for m in cls]] for name, cls in sorted(_ENUMS.items())],
        # The belief is native float64 bytes; sketch hashes are Python's int-tuple hash.
        "platform": [sys.byteorder, sys.hash_info.width, sys.hash_info.algorithm],
        "shingle_probe": sorted(text.shingles(["snapshot", "probe"], text.SHINGLE_WORDS)),
    }
    blob = json.dumps(shape, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


# ------------------------------------------------------------------ encoding


NESTED: Final[dict[str, tuple[str, ...]]] = {
    "lineage": LineageTracker.STATE_FIELDS,
    "phase_tracker": PhaseTracker.STATE_FIELDS,
    "pressure_tracker": PressureTracker.STATE_FIELDS,
    "rediscovery": RediscoveryTracker.STATE_FIELDS,
}
"""The analyzer's state values that are a tracker's ``state()`` (``rediscovery`` may be None),
with the tracker's ``STATE_FIELDS``."""


def encode_analyzer(analyzer: ConversationAnalyzer) -> Any:
    """The analyzer's state as a JSON value (its id and idle time are not included): a list
    of its values in ``STATE_FIELDS`` order, a tracker's state a list in its own order (the
    names are the digest's, not repeated on every line)."""
    state = analyzer.state()
    return [_encode_nested(name, state[name]) for name in ConversationAnalyzer.STATE_FIELDS]


def _encode_nested(name: str, value: Any) -> Any:
    fields = NESTED.get(name)
    if fields is None or value is None:
        return encode(value)
    return [encode(value[field]) for field in fields]


def encode(value: Any) -> Any:
    """One value as JSON (see the module docstring); ``SnapshotError`` for an unlisted type."""
    # Exact types: a StrEnum is a str and a NamedTuple a tuple, and both must come back as such.
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is str:
        return value
    if kind is float:
        return value if math.isfinite(value) else {"$f": repr(value)}
    if kind is tuple:
        return [encode(v) for v in value]
    encoder = _ENCODERS.get(kind)
    if encoder is not None:
        return encoder(value)
    name = kind.__name__
    if _ENUMS.get(name) is kind:
        return {"$e": name, "v": value.value}
    entry = _VALUES.get(name)
    if entry is not None and entry[0] is kind:
        return {"$o": name, "v": [encode(getattr(value, n)) for n in entry[1]]}
    raise SnapshotError(
        f"cannot snapshot a {kind.__module__}.{kind.__qualname__}: "
        "list it in processor/snapshot_codec.py (or derive it in the constructor)"
    )


def _encode_set(value: frozenset[Any] | set[Any]) -> Any:
    if all(type(v) is int and _MIN64 <= v <= _MAX64 for v in value):
        packed = b"".join(map(_INT64.pack, sorted(value)))
        return {"$q": base64.b64encode(packed).decode("ascii")}
    return {"$s": sorted((encode(v) for v in value), key=_json_key)}


def _json_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


_ENCODERS: Final[dict[type, Callable[[Any], Any]]] = {
    list: lambda v: {"$l": [encode(x) for x in v]},
    bytes: lambda v: {"$b": base64.b64encode(v).decode("ascii")},
    frozenset: _encode_set,
    set: _encode_set,
    array: lambda v: {"$a": v.typecode, "v": v.tolist()},
    dict: lambda v: {"$d": [[encode(k), encode(x)] for k, x in v.items()]},
}


# ------------------------------------------------------------------ decoding


def decode_state(raw: Any) -> dict[str, Any]:
    """The JSON of :func:`encode_analyzer` as values; ``SnapshotError`` when it is not one."""
    fields = ConversationAnalyzer.STATE_FIELDS
    if type(raw) is not list or len(raw) != len(fields):
        raise SnapshotError(f"a conversation's state must be a list of {len(fields)} values")
    return {name: _decode_nested(name, value) for name, value in zip(fields, raw, strict=True)}


def _decode_nested(name: str, raw: Any) -> Any:
    fields = NESTED.get(name)
    if fields is None or raw is None:
        return decode(raw)
    if type(raw) is not list or len(raw) != len(fields):
        raise SnapshotError(f"{name}: expected a list of {len(fields)} values")
    return {field: decode(value) for field, value in zip(fields, raw, strict=True)}


def decode(raw: Any) -> Any:
    """The inverse of :func:`encode`."""
    kind = type(raw)
    if kind in _PLAIN:
        return raw
    if kind is list:
        return tuple(map(decode, raw))
    if kind is not dict or len(raw) not in (1, 2):
        raise SnapshotError(f"not an encoded value: {_short(raw)}")
    tag = next(iter(raw))
    decoder = _DECODERS.get(tag)
    if decoder is None:
        raise SnapshotError(f"unknown value tag {tag!r}")
    try:
        return decoder(raw)
    except SnapshotError:
        raise
    except (KeyError, TypeError, ValueError, OverflowError, struct.error) as exc:
        raise SnapshotError(f"bad {tag} value {_short(raw)}: {exc}") from None


_PLAIN: Final = frozenset({type(None), bool, int, float, str})


def _decode_object(raw: dict[str, Any]) -> Any:
    name, items = raw["$o"], raw["v"]
    entry = _VALUES.get(name)
    if entry is None:
        raise SnapshotError(f"not an engine class: {name!r}")
    cls, names = entry
    if not isinstance(items, list) or len(items) != len(names):
        raise SnapshotError(f"{name}: expected {len(names)} values")
    return cls(**dict(zip(names, map(decode, items), strict=True)))


def _decode_float(raw: dict[str, Any]) -> float:
    if raw["$f"] not in ("nan", "inf", "-inf"):
        raise SnapshotError(f"not a float: {raw['$f']!r}")
    return float(raw["$f"])


def _decode_ints(raw: dict[str, Any]) -> frozenset[int]:
    packed = base64.b64decode(raw["$q"], validate=True)
    return frozenset(v for (v,) in _INT64.iter_unpack(packed))


def _decode_enum(raw: dict[str, Any]) -> Enum:
    return _ENUMS[raw["$e"]](raw["v"])


_DECODERS: Final[dict[str, Callable[[dict[str, Any]], Any]]] = {
    "$o": _decode_object,
    "$f": _decode_float,
    "$l": lambda raw: [decode(v) for v in raw["$l"]],
    "$b": lambda raw: base64.b64decode(raw["$b"], validate=True),
    "$q": _decode_ints,
    "$s": lambda raw: frozenset(decode(v) for v in raw["$s"]),
    "$a": lambda raw: array(raw["$a"], raw["v"]),
    "$d": lambda raw: {decode(k): decode(v) for k, v in raw["$d"]},
    "$e": _decode_enum,
}


def apply_state(analyzer: ConversationAnalyzer, state: dict[str, Any]) -> None:
    """Give ``analyzer``, freshly built, the state :func:`decode_state` read
    (``SnapshotError`` when the engine refuses it)."""
    try:
        analyzer.restore(state)
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotError(f"not a state this engine restores: {exc!r}") from None


def _short(raw: Any) -> str:
    text_ = repr(raw)
    return text_ if len(text_) <= 80 else text_[:77] + "..."
