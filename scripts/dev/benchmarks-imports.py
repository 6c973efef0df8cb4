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

Idempotent: the new forms match none of the old patterns. Prints each file it changed, then
each line it leaves to a reader ("check by hand": ``Path(__file__).parents[1]``, now one
folder short, a worker launched by its file path, the rest of a ``sys.path`` edit); unused
imports it leaves are ruff's.

Scripts still at the top of ``benchmarks/`` (added on a branch after the move) are mapped by
their prefix (``processor_ab.py`` -> ``benchmarks/processor/ab.py``, ``*_calibration.py`` ->
``benchmarks/calibration/``); ``--move`` first ``git mv``s them there. ``benchmarks/run``'s
table entries (``|processor_ab.py|``) become modules (``|processor.ab|``).

Usage: scripts/dev/benchmarks-imports.py [--check] [--move] [PATH...]   (default: benchmarks tests)
"""

from __future__ import annotations

import argparse
import re
import subprocess
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

FAMILIES = {"overhead_": "overhead", "processor_": "processor", "truth_": "truth"}
"""Prefix of a flat script -> its family, for scripts added after the move."""


def new_module(old: str) -> str | None:
    """Where the flat module ``old`` lives in the package, or None if it is no benchmark's."""
    if old in MOVED:
        return MOVED[old]
    for prefix, family in FAMILIES.items():
        if old.startswith(prefix):
            return f"benchmarks.{family}.{old.removeprefix(prefix)}"
    if old.endswith("_calibration"):
        return f"benchmarks.calibration.{old.removesuffix('_calibration')}"
    return None


def flat_scripts(root: Path) -> dict[str, str]:
    """The scripts still at ``benchmarks/``'s top (merged in from elsewhere), old -> new."""
    found = {}
    for path in sorted((root / "benchmarks").glob("*.py")):
        module = new_module(path.stem)
        if module is not None:
            found[path.stem] = module
    return found


class Rewriter:
    """The rewrites for one old -> new map."""

    def __init__(self, moved: dict[str, str]) -> None:
        self.moved = moved
        names = "|".join(sorted(moved, key=len, reverse=True))
        self.from_ = re.compile(rf"^([ \t]*)from ({names}) import (.*)$", re.M)
        self.import_ = re.compile(
            rf"^([ \t]*)import ({names})(?: as (\w+))?([ \t]*(?:#.*)?)$", re.M
        )
        self.path = re.compile(rf"\bbenchmarks/({names})\.py\b")
        self.reference = re.compile(rf"([\"'])({names}):(?=\w)")
        self.table = re.compile(rf"^([a-z-]+\|(?:bench|dev)\|)({names})\.py\|", re.M)

    def _from(self, m: re.Match[str]) -> str:
        return f"{m[1]}from {self.moved[m[2]]} import {m[3]}"

    def _import(self, m: re.Match[str]) -> str:
        package, _, module = self.moved[m[2]].rpartition(".")
        alias = m[3] or m[2]
        bound = module if alias == module else f"{module} as {alias}"
        return f"{m[1]}from {package} import {bound}{m[4] or ''}"

    def _entry(self, m: re.Match[str]) -> str:
        return f"{m[1]}{self.moved[m[2]].removeprefix('benchmarks.')}|"

    def rewrite(self, text: str, python: bool) -> str:
        """``text`` with the old names rewritten (imports only when ``python``)."""
        text = self.path.sub(lambda m: self.moved[m[1]].replace(".", "/") + ".py", text)
        text = self.table.sub(self._entry, text)
        if not python:
            return text
        text = self.reference.sub(lambda m: f"{m[1]}{self.moved[m[2]]}:", text)
        text, dropped = _SYS_PATH.subn("", text)
        text = self.import_.sub(self._import, self.from_.sub(self._from, text))
        return _NOQA_E402.sub("", text) if dropped else text


_SYS_PATH = re.compile(
    r"^(?:[ \t]*if str\(\w+\) not in sys\.path:\n)?"
    r"[ \t]*sys\.path\.insert\(0, (?:str\()?(?:HERE|BENCH\w*)\)?\)[^\n]*\n",
    re.M,
)
_NOQA_E402 = re.compile(r"[ \t]*# noqa: E402$", re.M)


_BY_HAND = re.compile(
    r"sys\.path|__file__\)?\.(?:resolve\(\)\.)?parents?\b|__file__, \"--worker\"|\bHERE\b"
)
"""What the rewrite leaves to a reader in a benchmark: path arithmetic from a module's file
(one folder deeper now: use ``benchmarks._meta.ROOT``), workers launched by file path
(``benchmarks._meta.python_m``), what is left of a ``sys.path`` edit."""
_BY_HAND_ELSEWHERE = re.compile(r"sys\.path\.remove|\bBENCH\w*\b")
"""The same in a test: what is left of a fixture that put ``benchmarks/`` on the path."""


def by_hand(paths: list[Path]) -> list[str]:
    """``file:line: text`` of every line of ``paths`` left to a reader."""
    found = []
    for path in paths:
        if path.suffix != ".py" or path.name == "_meta.py" or path.name == Path(__file__).name:
            continue
        folders = path.resolve().parts[-3:-1]
        inside = "benchmarks" in folders and "tests" not in folders
        pattern = _BY_HAND if inside else _BY_HAND_ELSEWHERE
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line) and "otel_compaction.__file__" not in line:
                found.append(f"{path}:{number}: {line.strip()}")
    return found


def move(root: Path, flat: dict[str, str]) -> None:
    """``git mv`` each flat script to its package (a folder new to git gets no ``__init__``)."""
    for old, module in flat.items():
        target = root / (module.replace(".", "/") + ".py")
        if not target.parent.is_dir():
            raise SystemExit(f"{old}.py: no package {target.parent} to move it to")
        if target.exists():
            raise SystemExit(f"{old}.py: {target} exists already")
        source = root / "benchmarks" / f"{old}.py"
        argv = ["git", "mv", str(source), str(target)]  # fixed argv, paths from the checkout
        subprocess.run(argv, cwd=root, check=True)  # noqa: S603
        print(f"moved {source.relative_to(root)} -> {target.relative_to(root)}")


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
    parser.add_argument(
        "--move", action="store_true", help="first git mv the flat scripts into their packages"
    )
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the checkout (default: .)")
    parser.add_argument("paths", nargs="*", type=Path)
    args = parser.parse_args(argv)
    flat = flat_scripts(args.root)
    if args.move and not args.check:
        move(args.root, flat)
    rewriter = Rewriter(MOVED | flat)
    changed = 0
    files = _files(args.paths or [args.root / "benchmarks", args.root / "tests"])
    for path in files:
        if path.resolve() == Path(__file__).resolve():
            continue  # its docstring names the old forms
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        new = rewriter.rewrite(text, python=path.suffix == ".py")
        if new != text:
            changed += 1
            print(path)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    for line in by_hand(files):
        print(f"check by hand: {line}")
    return 1 if args.check and (changed or flat) else 0


if __name__ == "__main__":
    sys.exit(main())
