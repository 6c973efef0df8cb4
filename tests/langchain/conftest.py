"""Fixtures: in-memory telemetry and the handler installed for every LangChain run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from otel_compaction.config import Settings
from otel_compaction.instrument.langchain import CompactionCallbackHandler, install, uninstall
from otel_compaction.testing import Capture, capture_telemetry


@pytest.fixture
def cap() -> Iterator[Capture]:
    """Fresh tracer and meter providers with in-memory exporters."""
    with capture_telemetry() as capture:
        yield capture


@pytest.fixture
def handler(cap: Capture) -> Iterator[CompactionCallbackHandler]:
    """The handler, installed globally on ``cap``'s providers, uninstalled afterwards."""
    installed = install(
        tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider, settings=Settings()
    )
    yield installed
    uninstall()
