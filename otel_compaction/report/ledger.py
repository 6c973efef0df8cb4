"""The compaction ledger of a conversation: what its compactions bought and what they cost.

Per compaction: the tokens it reclaimed (the context before it minus the context of the
first call after it), the tokens its summarizer's own calls spent (input and output,
when the source reports them), and the tokens of the tool results the agent fetched
again in its rediscovery horizon (docs/concepts.md#rediscovery). Per conversation, their
sums and ``net`` = reclaimed - summarizer - redone: a rough balance, since a token
reclaimed is saved on every later call while a token redone or summarized is paid once
(the ledger says what each side was, not what it is worth). ``baseline_tokens`` is the
conversation's own rediscovery at its ordinary points, per horizon, when one was
measured: the excess of ``redone`` over it is what the compactions cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from otel_compaction.model import CompactionAnalysis, Rediscovery, RediscoveryBaseline


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """One compaction's entry."""

    compaction_id: str
    turn: int
    reclaimed: int | None
    summarizer: int | None
    redone: Rediscovery | None

    def to_json(self) -> dict[str, object]:
        """The row as the JSON report holds it."""
        redone = self.redone
        return {
            "compaction_id": self.compaction_id,
            "turn": self.turn,
            "tokens_reclaimed": self.reclaimed,
            "summarizer_tokens": self.summarizer,
            "rediscovery": None
            if redone is None
            else {
                "calls": redone.calls,
                "tokens": redone.tokens,
                "turns": redone.turns,
                "horizon_turns": redone.horizon_turns,
                "tools": list(redone.tools),
            },
        }


@dataclass(frozen=True, slots=True)
class Ledger:
    """A conversation's compaction ledger."""

    conversation_id: str
    rows: tuple[LedgerRow, ...]
    baseline: RediscoveryBaseline | None

    @property
    def reclaimed(self) -> int:
        """Tokens reclaimed over every compaction whose size after is known."""
        return sum(r.reclaimed or 0 for r in self.rows)

    @property
    def summarizer(self) -> int:
        """Tokens the summarizers' own calls spent, where reported."""
        return sum(r.summarizer or 0 for r in self.rows)

    @property
    def redone(self) -> int:
        """Tokens of tool results fetched again after the compactions."""
        return sum(r.redone.tokens for r in self.rows if r.redone is not None)

    @property
    def net(self) -> int:
        """Reclaimed minus summarizer minus redone."""
        return self.reclaimed - self.summarizer - self.redone

    def to_json(self) -> dict[str, object]:
        """The ledger as the JSON report holds it (``compaction_ledger``)."""
        baseline = self.baseline.mean_tokens if self.baseline is not None else None
        return {
            "conversation_id": self.conversation_id,
            "compactions": [r.to_json() for r in self.rows],
            "tokens_reclaimed": self.reclaimed,
            "summarizer_tokens": self.summarizer,
            "tokens_redone": self.redone,
            "net": self.net,
            "baseline_tokens": None if baseline is None else round(baseline, 1),
        }


def ledger(
    conversation_id: str,
    compactions: tuple[CompactionAnalysis, ...],
    rediscovery: tuple[Rediscovery, ...],
    baseline: RediscoveryBaseline | None,
) -> Ledger:
    """The ledger of one conversation from its analyses and rediscovery horizons."""
    by_id = {r.compaction_id: r for r in rediscovery}
    rows = []
    for analysis in compactions:
        rec = analysis.record
        reclaimed = None
        if rec.tokens_before is not None and rec.tokens_after is not None:
            reclaimed = max(rec.tokens_before - rec.tokens_after, 0)
        cost = rec.summarizer
        summarizer = None if cost is None else cost.input_tokens + cost.output_tokens
        rows.append(
            LedgerRow(
                rec.compaction_id,
                rec.turn_index,
                reclaimed,
                summarizer,
                by_id.get(rec.compaction_id),
            )
        )
    return Ledger(conversation_id, tuple(rows), baseline)
