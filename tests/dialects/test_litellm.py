"""LiteLLM's own OpenTelemetry callback (``callbacks=["otel"]``), driven for real.

What reaches the processor depends on how LiteLLM is configured (docs/processor.md,
"LiteLLM"): under an application span it writes each call's usage over that span (the
last call wins) and keeps per-call data only in its ``raw_gen_ai_request`` spans, which
it writes only with message logging on and the legacy conventions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_compaction.otlp.dialects import unread_spans
from otel_compaction.semconv import FindingKind
from tests.dialects.runs import Verdict, judge, run_agent


def _run(
    tmp: Path, variant: str, *, root: bool, capture: bool, latest: bool
) -> tuple[Verdict, int]:
    data, server = run_agent(
        "litellm",
        "litellm_otel",
        tmp,
        api="litellm",
        variant=variant,
        steps=34 if variant == "healthy" else 12,
        root_span=root,
        capture=capture,
        extra={"semconv_latest": latest},
    )
    return judge(data), len(server.summaries)


@pytest.mark.parametrize(
    ("root", "latest"),
    [(True, False), (False, True)],
    ids=["app-span-raw-requests", "no-app-span-latest-conventions"],
)
def test_litellm_with_message_logging_gives_the_full_verdicts(
    root: bool, latest: bool, tmp_path: Path
) -> None:
    """Per-call spans with content: compactions where the agent compacted, stuck flagged."""
    healthy, summaries = _run(tmp_path, "healthy", root=root, capture=True, latest=latest)
    assert healthy.turns == 34
    assert [turn for _, turn, _ in healthy.compactions] == [16, 31]
    assert summaries == 2
    assert healthy.findings == []
    stuck, _ = _run(tmp_path, "stuck", root=root, capture=True, latest=latest)
    kinds = {f.kind for f in stuck.findings}
    assert {FindingKind.INEFFECTIVE_COMPACTION, FindingKind.REEXPANSION_LIVELOCK} <= kinds


def test_litellm_under_an_app_span_without_message_logging_loses_every_call(
    tmp_path: Path,
) -> None:
    """Only the usage written over the application span is left: no call, counted unread."""
    before = unread_spans().get("litellm", 0)
    verdict, _ = _run(tmp_path, "healthy", root=True, capture=False, latest=False)
    assert verdict.turns == 0
    assert unread_spans().get("litellm", 0) == before + 1


def test_litellm_without_content_sees_compactions_by_the_fall(tmp_path: Path) -> None:
    """No finish reasons, no content: compactions by the token fall, the livelock still found."""
    healthy, summaries = _run(tmp_path, "healthy", root=False, capture=False, latest=False)
    assert len(healthy.compactions) == summaries
    assert healthy.findings == []
    stuck, _ = _run(tmp_path, "stuck", root=False, capture=False, latest=False)
    assert FindingKind.REEXPANSION_LIVELOCK in {f.kind for f in stuck.findings}
