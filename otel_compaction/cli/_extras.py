"""Optional dependencies of the commands: which extra brings them, and the line that says so.

The parsers of every command import with the core dependencies only, so ``--help``
always shows the full options; a command whose extra is missing stops before it
starts with one line naming the exact ``pip install``.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Extra:
    """An extra of the distribution and the top-level modules it brings that we import."""

    name: str
    modules: tuple[str, ...]

    @property
    def install(self) -> str:
        """The command that installs it."""
        return f"pip install 'otel-compaction[{self.name}]'"

    def missing(self) -> list[str]:
        """The modules of this extra that cannot be imported here."""
        return [m for m in self.modules if not _importable(m)]

    def problem(self, what: str) -> str | None:
        """One line naming what is missing and how to install it, or None when nothing is."""
        missing = self.missing()
        if not missing:
            return None
        return f"{what} needs the {self.name} extra (missing: {', '.join(missing)}): {self.install}"


PROCESSOR = Extra(
    "processor", ("yaml", "grpc", "prometheus_client", "opentelemetry.exporter.prometheus")
)
REPORT = Extra("report", ("plotly",))
DEMO = Extra("demo", ("anthropic", "openai", "plotly"))


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a parent package is missing
        return False
