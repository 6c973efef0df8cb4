"""Metric values handed to the OTel SDK in bulk: a merge per attribute set per step.

:class:`BulkHistogram` takes the per-turn histogram (no exemplars); :class:`BulkRecords`
the compaction metrics, whose exemplars it keeps (see there).

The processor records ``compaction.context.token_fraction`` once per inference span,
the only metric it records per span. Through the SDK's ``Histogram.record`` that costs
about 12 µs a value (a ``Measurement``, the attribute set hashed, the exemplar filter
asked, one aggregation per reader locked), a quarter of a GenAI span's cost. The SDK has
no public call that takes many values, so :class:`BulkHistogram` holds the values of one
pipeline step per attribute set and merges them into the SDK's own aggregation of each
reader at the end of the step: bucket counts, sum, min and max, exactly what as many
``record`` calls would have added. The series exported (Prometheus and OTLP) are the same
names, labels and values (``tests/emit/test_bulk_histogram.py`` holds the two paths equal).

Exemplars: a value merged in bulk offers no exemplar. The processor records the turns'
fraction without a span context, so under the SDK's default ``trace_based`` filter (and
``always_off``) they never had one. When the filter would sample one (``always_on``, or a
sampled span current on the pipeline thread), or when the SDK's internals are not those
this module was written against (``opentelemetry-sdk`` 1.45), every value goes through
``record`` as before. The merge is made only under the SDK releases it was read against
(:data:`MERGED_SDK_RELEASES`): a later release that kept the names but changed their meaning
would otherwise export wrong counts, where the fallback only costs time.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Mapping
from typing import Any

from opentelemetry.context import Context, get_current
from opentelemetry.sdk.version import __version__ as _SDK_VERSION

MERGED_SDK_RELEASES = ("1.45.",)
"""The SDK releases whose private aggregation this module merges into, as read and tested;
under any other release every value goes through ``record`` (slower, never wrong)."""

_HISTOGRAM: Any = None
_SUM: Any = None
_HASH: Any = None
if _SDK_VERSION.startswith(MERGED_SDK_RELEASES):  # pragma: no branch
    try:  # the SDK's private pieces the merge needs; absent: every value is recorded
        from opentelemetry.sdk.metrics._internal import _view_instrument_match as _matching
        from opentelemetry.sdk.metrics._internal import aggregation as _aggregations
    except ImportError:  # pragma: no cover - a release that moved them
        pass
    else:
        _HISTOGRAM = getattr(_aggregations, "_ExplicitBucketHistogramAggregation", None)
        _SUM = getattr(_aggregations, "_SumAggregation", None)
        _HASH = getattr(_matching, "_hash_attributes", None)


_INF = float("inf")


class BulkHistogram:
    """Values of one synchronous SDK histogram, held per attribute set until ``flush``.

    Args:
        instrument: the SDK ``Histogram`` (``MeterProvider``'s, not the API's no-op).

    ``add`` is not thread-safe: one thread (the pipeline's) adds and flushes.
    """

    __slots__ = ("_instrument", "_pending")

    def __init__(self, instrument: Any) -> None:
        self._instrument = instrument
        self._pending: dict[int, tuple[Mapping[str, str], list[float]]] = {}

    def add(self, value: float, attributes: Mapping[str, str]) -> None:
        """Hold ``value`` for ``attributes`` (a set built once and reused, as the caller's)."""
        held = self._pending.get(id(attributes))
        if held is None:
            self._pending[id(attributes)] = (attributes, [value])
        else:
            held[1].append(value)

    def flush(self) -> None:
        """Hand every held value to the SDK: merged in bulk, or recorded one by one."""
        pending, self._pending = self._pending, {}
        for attributes, held in pending.values():
            # What the SDK refuses (a negative value) or cannot bucket (NaN, infinity) is
            # left to ``record``, which handles it as it always did.
            values = [v for v in held if 0.0 <= v < _INF]
            odd = [v for v in held if not 0.0 <= v < _INF] if len(values) < len(held) else []
            if values and not self._merge(attributes, values):
                odd = held
            for value in odd:
                self._instrument.record(value, attributes)

    def _merge(self, attributes: Mapping[str, str], values: list[float]) -> bool:
        """Merge ``values`` into every reader's aggregation; False: record them instead."""
        matches = _matches(self._instrument, attributes)
        if matches is None:
            return False
        for match in matches:
            attrs = dict(attributes)
            keys = match._view._attribute_keys
            if keys is not None:
                attrs = {k: v for k, v in attrs.items() if k in keys}
            # Under the view's lock, as the SDK aggregates for a reader that resets on collection.
            with match._lock:
                _merge_into(match._get_or_create_aggregation(_HASH(attrs), attrs), values)
        return True


def _matches(instrument: Any, attributes: Mapping[str, str]) -> list[Any] | None:
    """The SDK's per-reader views of ``instrument``; None when values cannot be merged: another
    SDK, a view that aggregates otherwise, an exemplar filter that would sample one now."""
    if _HISTOGRAM is None or _HASH is None:
        return None
    try:
        consumer = instrument._measurement_consumer
        sample = consumer._sdk_config.exemplar_filter.should_sample
        if sample(0.0, time.time_ns(), attributes, get_current()):
            return None
        matches = [
            match
            for storage in consumer._reader_storages.values()
            for match in storage._get_or_init_view_instrument_match(instrument)
        ]
        mergeable = all(
            isinstance(match._aggregation, _HISTOGRAM)
            and callable(getattr(match, "_get_or_create_aggregation", None))
            for match in matches
        )
    except AttributeError:
        return None
    return matches if mergeable else None


def _merge_into(aggregation: Any, values: list[float]) -> None:
    """What ``aggregate`` does for each value, once for all (the values are finite)."""
    boundaries = aggregation._boundaries
    with aggregation._lock:
        if aggregation._value is None:
            aggregation._value = aggregation._get_empty_bucket_counts()
        buckets = aggregation._value
        total = aggregation._sum
        for value in values:  # summed in order, as one ``aggregate`` after another
            buckets[bisect_left(boundaries, value)] += 1
            total += value
        aggregation._sum = total
        if aggregation._record_min_max:
            aggregation._min = min(aggregation._min, min(values))
            aggregation._max = max(aggregation._max, max(values))


# ------------------------------------------------------------ the compaction metrics

_Record = tuple[Any, float, "Mapping[str, str] | None", Context, int]
"""(instrument, value, attributes, context, time_unix_nano) of one record held."""


class BulkRecords:
    """The compaction metrics' records, with their spans' contexts, held until ``flush``.

    A compaction records five to eight values (``CompactionMetrics.record_compaction``:
    counters and histograms, each with the compaction span's context for its exemplar).
    :meth:`instrument` gives a stand-in for an SDK counter or histogram whose ``add`` and
    ``record`` hold the value; :meth:`flush` hands them to the SDK per instrument and
    attribute set: the aggregation of each reader takes their sum (and bucket counts, min
    and max), in the order recorded, and **every value is offered to the aggregation's
    exemplar reservoir** as ``record`` offers it (the same value, attributes, context and
    time, when the SDK's exemplar filter samples it), so the exemplars exported are those
    one record at a time would keep: the histograms' reservoirs keep the last value of each
    bucket, the counters' a random sample of the values (the SDK's, as random as before).
    What cannot be merged (another SDK, a view that aggregates otherwise, a value the SDK
    refuses or an attribute that is not a string) is recorded one by one, in order.

    Not thread-safe: one thread (the pipeline's) records and flushes.
    """

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: list[_Record] = []

    def instrument(self, instrument: Any) -> _Held:
        """A stand-in for ``instrument`` (an SDK ``Counter`` or ``Histogram``) that holds."""
        return _Held(instrument, self._held)

    def flush(self) -> None:
        """Hand every held record to the SDK: merged per instrument and attribute set."""
        if not self._held:
            return
        held = self._held.copy()
        self._held.clear()
        groups: dict[tuple[int, frozenset[tuple[str, str]]], list[_Record]] = {}
        for record in held:
            attributes = record[2]
            key = (id(record[0]), frozenset(attributes.items()) if attributes else frozenset())
            groups.setdefault(key, []).append(record)
        for records in groups.values():
            if not _merge_records(records):
                for instrument, value, attributes, context, _ in records:
                    _one(instrument, value, attributes, context)


class _Held:
    """One SDK instrument's stand-in: ``add`` and ``record`` hold the value for ``flush``."""

    __slots__ = ("_held", "_instrument")

    def __init__(self, instrument: Any, held: list[_Record]) -> None:
        self._instrument = instrument
        self._held = held

    def record(
        self, value: float, attributes: Mapping[str, str] | None = None,
        context: Context | None = None,
    ) -> None:  # fmt: skip
        """Hold a value (the current context when none is given, as the SDK's ``record``)."""
        self._held.append((self._instrument, value, attributes, context or get_current(),
                           time.time_ns()))  # fmt: skip

    add = record


def _one(instrument: Any, value: float, attributes: Any, context: Context) -> None:
    """One record through the SDK's own call."""
    if hasattr(instrument, "record"):
        instrument.record(value, attributes, context=context)
    else:
        instrument.add(value, attributes, context=context)


def _merge_records(records: list[_Record]) -> bool:
    """Merge one instrument's records of one attribute set; False: record them instead."""
    instrument, attributes = records[0][0], records[0][2]
    if any(type(r[1]) not in (int, float) or not 0 <= r[1] < _INF for r in records):
        return False  # the SDK's own refusal (and warning) for these
    if attributes and not all(type(v) is str for v in attributes.values()):
        return False
    kinds = (_HISTOGRAM, _SUM)
    if _HASH is None or None in kinds:
        return False
    try:
        if not instrument._is_enabled():
            return False
        consumer = instrument._measurement_consumer
        sample = consumer._sdk_config.exemplar_filter.should_sample
        matches = [
            match
            for storage in consumer._reader_storages.values()
            for match in storage._get_or_init_view_instrument_match(instrument)
        ]
        if not all(isinstance(m._aggregation, kinds) for m in matches):
            return False
    except AttributeError:
        return False
    # One filter decision per value for every reader, as the SDK's consumer makes it.
    offers = [(v, t, a, c) for _, v, a, c, t in records if sample(v, t, a, c)]
    values = [r[1] for r in records]
    for match in matches:
        attrs = dict(attributes) if attributes else {}
        keys = match._view._attribute_keys
        if keys is not None:
            attrs = {k: v for k, v in attrs.items() if k in keys}
        with match._lock:
            aggregation = match._get_or_create_aggregation(_HASH(attrs), attrs)
            if isinstance(aggregation, _HISTOGRAM):
                _merge_into(aggregation, values)
            else:
                _add_into(aggregation, values)
            for offer in offers:
                aggregation._reservoir.offer(*offer)
    return True


def _add_into(aggregation: Any, values: list[float]) -> None:
    """What a sum's ``aggregate`` does for each value, once for all, in order."""
    with aggregation._lock:
        total = 0 if aggregation._value is None else aggregation._value
        for value in values:
            total = total + value
        aggregation._value = total
