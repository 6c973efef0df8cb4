"""Detectors: pure rules that turn one compaction in its context into findings.

The same code runs in the agent process (through ``ConversationAnalyzer``) and
in the processor service. Each detector implements ``Detector`` (a ``kind`` and
``evaluate(ctx) -> Finding | None``); ``run_detectors`` applies a sequence of
them and never lets one that raises break the caller.
"""

from __future__ import annotations

from otel_compaction.detectors.base import (
    DetectionContext,
    Detector,
    RuleDetector,
    needs_run_end,
    needs_size_after,
    run_detectors,
)
from otel_compaction.detectors.boundary import BOUNDARY_DETECTOR, boundary_compaction
from otel_compaction.detectors.cadence import CadenceVerdict, cadence_verdict
from otel_compaction.detectors.ineffective import INEFFECTIVE_DETECTOR, ineffective_compaction
from otel_compaction.detectors.livelock import (
    LIVELOCK_DETECTOR,
    NO_PROGRESS_DETECTOR,
    no_progress,
    reexpansion_livelock,
)
from otel_compaction.detectors.rubric import (
    LOST_TASK_AFTER_DETECTOR,
    LOST_TASK_DETECTOR,
    SCHEMA_DETECTOR,
    SHORT_RUN_DETECTOR,
    lost_task,
    lost_task_after,
    short_run_compaction,
    summary_schema_coverage,
)

DEFAULT_DETECTORS: tuple[Detector, ...] = (
    BOUNDARY_DETECTOR,
    LIVELOCK_DETECTOR,
    SHORT_RUN_DETECTOR,
    SCHEMA_DETECTOR,
    LOST_TASK_DETECTOR,
    INEFFECTIVE_DETECTOR,
    NO_PROGRESS_DETECTOR,
    LOST_TASK_AFTER_DETECTOR,
)
"""Every detector, in the order their findings are reported: those that need the size
after the compaction (``needs_size_after``) run when it is settled."""

__all__ = [
    "BOUNDARY_DETECTOR",
    "DEFAULT_DETECTORS",
    "INEFFECTIVE_DETECTOR",
    "LIVELOCK_DETECTOR",
    "LOST_TASK_AFTER_DETECTOR",
    "LOST_TASK_DETECTOR",
    "NO_PROGRESS_DETECTOR",
    "SCHEMA_DETECTOR",
    "SHORT_RUN_DETECTOR",
    "CadenceVerdict",
    "DetectionContext",
    "Detector",
    "RuleDetector",
    "boundary_compaction",
    "cadence_verdict",
    "ineffective_compaction",
    "lost_task",
    "lost_task_after",
    "needs_run_end",
    "needs_size_after",
    "no_progress",
    "reexpansion_livelock",
    "run_detectors",
    "short_run_compaction",
    "summary_schema_coverage",
]
