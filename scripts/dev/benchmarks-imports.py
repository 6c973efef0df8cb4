#!/usr/bin/env python3
"""Rewrite the benchmarks' old flat names to their packages: imports and file paths.

Until the benchmarks became packages (``benchmarks/overhead/``, ``processor/``, ``truth/``,
``calibration/``), each script imported the others as siblings with ``benchmarks/`` put on
``sys.path``. This rewrites, in the files given (folders are walked), what still speaks the
old way:

- ``from overhead_configs import X`` -> ``from benchmarks.overhead.configs import X``
- ``import overhead_worker as w`` -> ``from benchmarks.overhead import worker as w``, and a
  bare ``import detection_truth`` -> ``from benchmarks.truth import detection as
  detection_truth`` (the name the code uses stays bound);
- ``sys.path.insert(0, ...)`` lines (and their ``if ... not in sys.path:``) that put the
  benchmarks' folder on the path are dropped, with the ``# noqa: E402`` only they needed;
- ``"overhead_floor:Floor"``, a module:attribute string -> ``"benchmarks.overhead.floor:Floor"``;
- ``benchmarks/overhead_first.py`` -> ``benchmarks/overhead/first.py`` in any text file.

Idempotent: the new forms match none of the old patterns. Prints each file it changed; leaves
what it cannot rewrite safely (``import sys`` or ``HERE`` left unused) to ruff and a reader.

Usage: scripts/dev/benchmarks-imports.py [--check] PATH...
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

MOVED: dict[str, str] = {
    "instrumentation_overhead": "benchmarks.overhead.run",
    "overhead_ab": "benchmarks.overhead.ab",
    "overhead_clock": "benchmarks.overhead.clock",
    "overhead_configs": "benchmarks.overhead.configs",
    "overhead_first": "benchmarks.overhead.first",
    "overhead_floor": "benchmarks.overhead.floor",
    "overhead_history": "benchmarks.overhead.history",
    "overhead_instructions": "benchmarks.overhead.instructions",
    "overhead_markdown": "benchmarks.overhead.markdown",
    "overhead_report": "benchmarks.overhead.report",
    "overhead_stages": "benchmarks.overhead.stages",
    "overhead_targets": "benchmarks.overhead.targets",
    "overhead_worker": "benchmarks.overhead.worker",
    "document_loop": "benchmarks.overhead.document_loop",
    "processor_checks": "benchmarks.processor.checks",
    "processor_inprocess": "benchmarks.processor.inprocess",
    "processor_payloads": "benchmarks.processor.payloads",
    "processor_throughput": "benchmarks.processor.throughput",
    "otlp_harness": "benchmarks.processor.otlp_harness",
    "state_snapshot": "benchmarks.processor.state_snapshot",
    "detection_truth": "benchmarks.truth.detection",
    "truth_agent": "benchmarks.truth.agent",
    "truth_classes": "benchmarks.truth.classes",
    "truth_harness": "benchmarks.truth.harness",
    "truth_limits": "benchmarks.truth.limits",
    "truth_model": "benchmarks.truth.model",
    "truth_phases": "benchmarks.truth.phases",
    "truth_report": "benchmarks.truth.report",
    "truth_rules": "benchmarks.truth.rules",
    "truth_run": "benchmarks.truth.run",
    "truth_score": "benchmarks.truth.score",
    "truth_text": "benchmarks.truth.text",
    "truth_wire": "benchmarks.truth.wire",
    "phase_calibration": "benchmarks.calibration.phase",
    "rediscovery_calibration": "benchmarks.calibration.rediscovery",
    "run_meta": "benchmarks._meta",
}
"""Old sibling module -> its module in the package."""

_NAMES = "|".join(sorted(MOVED, key=len, reverse=True))
_FROM = re.compile(rf"^(?P<indent>[ \t]*)from (?P<old>{_NAMES}) import (?P<rest>.*)$", re.M)
_IMPORT = re.compile(
    rf"^(?P<indent>[ \t]*)import (?P<old>{_NAMES})(?: as (?P<alias>\w+))?(?P<tail>[ \t]*(?:#.*)?)$",
    re.M,
)
_SYS_PATH = re.compile(
    r"^(?:[ \t]*if str\(\w+\) not in sys\.path:\n)?"
    r"[ \t]*sys\.path\.insert\(0, (?:str\()?(?:HERE|BENCH\w*)\)?\)[^\n]*\n",
    re.M,
)
_NOQA_E402 = re.compile(r"[ \t]*# noqa: E402$", re.M)
_PATH = re.compile(rf"\bbenchmarks/(?P<old>{_NAMES})\.py\b")
_REFERENCE = re.compile(rf"(?P<quote>[\"'])(?P<old>{_NAMES}):(?=\w)")


def _from(match: re.Match[str]) -> str:
    return f"{match['indent']}from {MOVED[match['old']]} import {match['rest']}"


def _import(match: re.Match[str]) -> str:
    package, _, module = MOVED[match["old"]].rpartition(".")
    alias = match["alias"] or match["old"]
    bound = module if alias == module else f"{module} as {alias}"
    return f"{match['indent']}from {package} import {bound}{match['tail']}"


def _reference(match: re.Match[str]) -> str:
    return f"{match['quote']}{MOVED[match['old']]}:"


def _path(match: re.Match[str]) -> str:
    return MOVED[match["old"]].replace(".", "/") + ".py"


def rewrite(text: str, python: bool) -> str:
    """``text`` with the old names rewritten (imports only when ``python``)."""
    text = _PATH.sub(_path, text)
    if not python:
        return text
    text, dropped = _SYS_PATH.subn("", _REFERENCE.sub(_reference, text))
    text = _IMPORT.sub(_import, _FROM.sub(_from, text))
    return _NOQA_E402.sub("", text) if dropped else text


def _files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += [p for p in sorted(path.rglob("*")) if p.is_file() and ".git" not in p.parts]
        else:
            found.append(path)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if needed")
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
    changed = 0
    for path in _files(args.paths):
        if path.resolve() == Path(__file__).resolve():
            continue  # its docstring names the old forms
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        new = rewrite(text, python=path.suffix == ".py")
        if new != text:
            changed += 1
            print(path)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
