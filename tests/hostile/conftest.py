"""Fixtures of the hostile-input suite, shared with the suites of the parts it attacks."""

from __future__ import annotations

from tests.instrument.conftest import cap, instrument, settings
from tests.processor.conftest import pipeline_factory, processor_metrics

__all__ = ["cap", "instrument", "pipeline_factory", "processor_metrics", "settings"]
