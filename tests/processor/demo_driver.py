"""Runs the demo (``run_demo``) with its OTLP sent to ``argv[2]`` and writes, one JSON line
each to ``argv[3]``, the findings the instrumentation raised in this process.

Usage: python demo_driver.py OUT_DIR OTLP_URL FINDINGS_FILE [SCENARIO...]
(run as a child process by tests/processor/test_demo_parity.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from otel_compaction.demo import runner
from otel_compaction.demo.scenarios import SCENARIOS
from otel_compaction.instrument import CompactionInstrumentor
from otel_compaction.model import Finding

RAISED: list[Finding] = []


class _Teed(CompactionInstrumentor):
    """The real instrumentor; every finding it hands the demo is also kept in ``RAISED``."""

    def instrument(self, **kwargs: Any) -> None:
        given = kwargs["on_finding"]

        def both(finding: Finding) -> None:
            RAISED.append(finding)
            given(finding)

        kwargs["on_finding"] = both
        super().instrument(**kwargs)


def main(argv: list[str]) -> int:
    """Run the scenarios named (all by default); 0 when every one went as expected."""
    out_dir, url, findings_file, *names = argv
    scenarios = [s for s in SCENARIOS if not names or s.name in names]
    runner.CompactionInstrumentor = _Teed  # type: ignore[attr-defined]
    result = runner.run_demo(Path(out_dir), scenarios, otlp_endpoint=url)
    lines = [json.dumps(f.to_json(), sort_keys=True) for f in RAISED]
    Path(findings_file).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
