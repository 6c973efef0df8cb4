"""Reading a Claude Code record once per run, whichever file holds it.

A resumed or forked session and a compaction sub-agent start with copies of their
parent's records (docs/analyze.md#resumed-forked-and-sub-agent-transcripts-each-compaction-once).
:class:`ReadOnce` asks the run's :class:`~otel_compaction.transcripts.ledger.RecordLedger`
about each record of one file, by its keys: its ``uuid`` (else its content) and, for a
``compact_boundary``, the point of the conversation it compacted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from otel_compaction.transcripts.ledger import RecordLedger


class ReadOnce:
    """The read-once test of one file's records.

    Args:
        ledger: shared by the files of one run.
        name: the file's name in the ledger's continuations.
        conversation: the conversation a record belongs to.
    """

    __slots__ = ("_conversation", "_file", "_ledger", "_skip_summaries")

    def __init__(
        self, ledger: RecordLedger, name: str, conversation: Callable[[dict[str, Any]], str]
    ) -> None:
        self._ledger = ledger
        self._file = ledger.start_file(name)
        self._conversation = conversation
        self._skip_summaries: set[str] = set()

    def first_reading(self, record: dict[str, Any]) -> bool:
        """Whether the record is read now; a repeated boundary also drops the summary after it."""
        sidechain = record.get("isSidechain") is True
        boundary = boundary_key(record) if record.get("subtype") == "compact_boundary" else None
        keys = (record_key(record),) if boundary is None else (record_key(record), boundary)
        claimed = self._ledger.claim(keys, self._file, sidechain)
        if record.get("subtype") == "compact_boundary":
            cid = self._conversation(record)
            if claimed:
                self._skip_summaries.discard(cid)
            else:
                self._skip_summaries.add(cid)
        elif record.get("isCompactSummary") is True:
            cid = self._conversation(record)
            if cid in self._skip_summaries:
                self._skip_summaries.discard(cid)
                return False  # the summary of a repeated boundary (under a new uuid or not)
        return claimed


def record_key(record: dict[str, Any]) -> str:
    """What makes a record the same record: its uuid, else its whole content."""
    uuid = record.get("uuid")
    if isinstance(uuid, str) and uuid:
        return uuid
    text = json.dumps(record, sort_keys=True, default=str)
    return "#" + hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def boundary_key(record: dict[str, Any]) -> str | None:
    """What makes a ``compact_boundary`` the same compaction under another ``uuid``: the
    message it followed, its size before, trigger and time (None without that message)."""
    parent = record.get("logicalParentUuid")
    meta = record.get("compactMetadata")
    if not isinstance(parent, str) or not parent or not isinstance(meta, dict):
        return None
    fields = (parent, meta.get("preTokens"), meta.get("trigger"), record.get("timestamp"))
    return "boundary\x00" + "\x00".join(str(v) for v in fields)
