"""The generated parts of docs/benchmarks.md: the targets table that opens the page, and the
results of the ``## Instrumentation overhead`` section.

Only the text between each pair of markers is generated; the hand-written reading of the
numbers and every other section of the file are kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.overhead.configs import BASELINE, BY_KEY, OURS, OWN_TIME_EXACT
from benchmarks.overhead.report import BEGIN, END, SECTION, TARGETS_BEGIN, TARGETS_END, Row
from benchmarks.overhead.targets import Verdict
from otel_compaction import semconv


def _fmt_cell(row: Row | None) -> str:
    if row is None:
        return "–"
    if row.error:
        return "error (see findings)"
    if row.median_ms is None:
        return "–"
    if row.config == BASELINE:
        return f"{row.median_ms:.2f} ms (p90 {row.p90_ms:.2f})"
    if not row.spans_per_call:
        return "**no span emitted**"
    spread = ""
    if len(row.pass_added_ms) > 1:
        spread = f"; passes {min(row.pass_added_ms):+.2f}…{max(row.pass_added_ms):+.2f}"
    return f"**{row.added_ms:+.2f}** (p90 {row.added_p90_ms:+.2f}{spread})"


def results_table(rows: Sequence[Row], provider: str, stream: bool) -> str:
    """Rows = configurations, columns = history lengths; added ms over the uninstrumented call."""
    mine = [r for r in rows if r.provider == provider and r.stream == stream and r.length]
    lengths = sorted({r.length for r in mine})
    configs = [c for c in BY_KEY if any(r.config == c for r in mine)]
    head = "| configuration | spans/call | " + " | ".join(f"{n:,} msgs" for n in lengths) + " |"
    lines = [head, "|---|---|" + "---|" * len(lengths)]
    for config in configs:
        cells = {r.length: r for r in mine if r.config == config}
        spans = {f"{r.spans_per_call:g}" for r in cells.values() if r.spans_per_call is not None}
        label = BY_KEY[config].label
        shown = ", ".join(sorted(spans)) or "–"
        lines.append(
            f"| {label} | {shown} | " + " | ".join(_fmt_cell(cells.get(n)) for n in lengths) + " |"
        )
    return "\n".join(lines)


def emits_table(rows: Sequence[Row], provider: str) -> str:
    """What each configuration emits per call, from the verification calls."""
    mine = [r for r in rows if r.provider == provider and not r.stream and r.verify]
    lengths = sorted({r.length for r in mine})
    if not lengths:
        return "_no verification data_"
    lo, hi = lengths[0], lengths[-1]
    lines = [
        f"| configuration | spans per call (name [scope], kind) | attributes at {lo:,} msgs | "
        f"attributes at {hi:,} msgs | warnings logged per call at {lo:,} / {hi:,} msgs |",
        "|---|---|---|---|---|",
    ]
    for config in BY_KEY:
        by_len = {r.length: r for r in mine if r.config == config}
        if not by_len:
            continue
        first = by_len.get(lo) or next(iter(by_len.values()))
        spans = "; ".join(_span_text(s) for s in first.verify) or "none"
        logged = " / ".join(str(by_len[n].log_records) if n in by_len else "–" for n in (lo, hi))
        attrs = f"{_attrs(by_len.get(lo))} | {_attrs(by_len.get(hi))}"
        lines.append(f"| {BY_KEY[config].label} | {spans} | {attrs} | {logged} |")
    return "\n".join(lines)


def _span_text(span: Mapping[str, Any]) -> str:
    turn = f" (turn {span['turn_index']})" if "turn_index" in span else ""
    return f"`{span['name']}`{turn} [{span['scope']}], {span['kind']}"


def metrics_table(metrics: Mapping[str, Mapping[str, Mapping[str, float]]], provider: str) -> str:
    """The metrics each configuration recorded during the run."""
    lines = ["| configuration | metrics recorded |", "|---|---|"]
    for config in BY_KEY:
        if (totals := metrics.get(provider, {}).get(config)) is not None:
            names = ", ".join(f"`{n}`" for n in sorted(totals)) or "none"
            lines.append(f"| {BY_KEY[config].label} | {names} |")
    return "\n".join(lines)


def _attrs(row: Row | None) -> str:
    if row is None or not row.verify:
        return "–"
    count = sum(int(s["attributes"]) for s in row.verify)
    size = sum(int(s["attribute_bytes"]) for s in row.verify)
    return f"{count} / {_bytes(size)}"


def _bytes(size: int) -> str:
    if size >= 1_000_000:
        return f"{size / 1e6:.1f} MB"
    return f"{size / 1e3:.1f} KB" if size >= 1000 else f"{size} B"


OWN_NOTE = (
    "Wall time of the call minus the time spent inside the SDK's `create` and stream steps, "
    "measured by shims installed under every instrumentation (`benchmarks/overhead/clock.py`); "
    "the uninstrumented row is the shims' own cost, the others are added to it. No comparison "
    "across processes is involved, so this resolves tenths of a millisecond even at 2,000 "
    "messages. Only for configurations whose hooks all sit outside the SDK call: the SDK's "
    "span and OpenInference also work inside it."
)
TARGETS_NOTE = (
    "Each statement is judged by differences that must be below zero (ours - OpenLLMetry, ours - "
    "1.5 x python-genai, ours at 2,000 messages - 2 x ours at 20, ...), taken within each pass "
    "and averaged over passes with their 90 % confidence interval: **met** when every interval "
    "is below zero, **missed** when one is above, **within noise** otherwise. Own time where "
    "both sides have it exactly, CPU time against OpenInference (`benchmarks/overhead/targets.py`)."
)


def _header(meta: Mapping[str, Any]) -> list[str]:
    versions = ", ".join(f"{k} {v}" for k, v in sorted(meta["versions"].items()))
    return [
        f"_Last run: {meta['date']}, `{meta['command']}`, {meta['wall_s']:.0f} s wall; "
        f"raw results: `{meta['json_path']}`._",
        "",
        f"**Machine.** `{meta['uname'].strip()}`; {meta['nproc']} cores, shared with other work "
        f"(load average {meta['load_before']} before, {meta['load_after']} after); "
        f"Python {meta['python']}.",
        "",
        f"**Plan.** {meta['plan']}",
        "",
        f"**Versions measured.** {versions}.",
    ]


def _provider_part(
    provider: str,
    rows: Sequence[Row],
    wall_rows: Sequence[Row],
    metrics: Mapping[str, Mapping[str, Mapping[str, float]]],
) -> list[str]:
    out: list[str] = []
    for stream in (False, True):
        mode = "streaming (`stream=True`, every event consumed)" if stream else "non-streaming"
        out += ["", f"### {provider}, {mode}: added CPU time per call", ""]
        out.append(results_table(rows, provider, stream))
    out += ["", f"### {provider}: what each configuration emits per call", ""]
    out.append(emits_table(rows, provider))
    out += ["", metrics_table(metrics, provider)]
    summary = f"{provider}: the same in wall-clock time (noisier on a shared machine)"
    out += ["", f"<details><summary>{summary}</summary>"]
    for stream in (False, True):
        mode = "streaming" if stream else "non-streaming"
        out += ["", f"**{mode}**", "", results_table(wall_rows, provider, stream)]
    return [*out, "", "</details>"]


def _failures(rows: Sequence[Row]) -> list[str]:
    seen: dict[tuple[str, str, str], None] = {}
    for r in rows:
        if r.error:
            seen[(r.provider, r.config, r.error)] = None
    if not seen:
        return []
    lines = ["", "### Configurations that failed", ""]
    return lines + [f"- {p}, {BY_KEY[c].label}: `{e}`" for p, c, e in seen]


def own_part(own_rows: Sequence[Row]) -> list[str]:
    """Own time (outside the SDK call) of the configurations whose hooks are all outside it."""
    shown = [r for r in own_rows if r.config in OWN_TIME_EXACT]
    if not shown:
        return []
    out = ["", "### anthropic: own time per call (in-process: call time minus time inside the SDK)"]
    out += ["", OWN_NOTE]
    for stream in (False, True):
        mode = "streaming" if stream else "non-streaming"
        out += ["", f"**{mode}**", "", results_table(shown, "anthropic", stream)]
    return out


def render(
    meta: Mapping[str, Any],
    rows: Sequence[Row],
    wall_rows: Sequence[Row],
    verdicts: Sequence[Verdict],
    own_rows: Sequence[Row] = (),
) -> str:
    """The generated markdown: machine, plan, versions, results, emits, targets, failures."""
    out = _header(meta)
    for provider in meta["providers"]:
        out += _provider_part(provider, rows, wall_rows, meta.get("metrics", {}))
        if provider == "anthropic":
            out += own_part(own_rows)
    out += _ours_checks(meta.get("metrics", {}))
    out += ["", "### Targets: every difference (anthropic)", "", TARGETS_NOTE, ""]
    out += [f"- **{v.state}**: {v.target}: {v.detail}" for v in verdicts] or ["- not evaluated"]
    out += _failures(rows)
    return "\n".join(out)


def render_targets(meta: Mapping[str, Any], verdicts: Sequence[Verdict]) -> str:
    """The table that opens docs/benchmarks.md: each target, the run's figures, met or not."""
    at = f" at commit {meta['commit']}" if meta.get("commit") else ""
    anthropic = meta["versions"].get("anthropic", "?")
    lines = [
        f"Run of {meta['date']}, `{meta['command']}`{at}, {meta['wall_s']:.0f} s; "
        f"`{meta['uname'].strip()}`, {meta['nproc']} cores shared with other work (load average "
        f"{meta['load_before']} before, {meta['load_after']} after), Python {meta['python']}, "
        f"anthropic {anthropic}. Raw results: `{meta['json_path']}`; this table and the "
        f"overhead section are rendered from them by `benchmarks/run overhead --from-json "
        f"{meta['json_path']}`.",
        "",
        "| target | figures of that run (anthropic, added ms per call) | state |",
        "|---|---|---|",
        *(f"| {v.target} | {v.summary} | **{v.state}** |" for v in verdicts),
    ]
    if not verdicts:
        lines.append("| – | anthropic not run | not evaluated |")
    return "\n".join(lines)


def _ours_checks(metrics: Mapping[str, Mapping[str, Mapping[str, float]]]) -> list[str]:
    """Ours counts its own swallowed errors and the compactions it inferred: both must be 0."""
    errors, compactions = (
        semconv.METRIC_INSTRUMENTATION_ERRORS.name,
        semconv.METRIC_COMPACTIONS.name,
    )
    out = []
    for provider, by_config in metrics.items():
        for config in (OURS, *(c for c in by_config if c.startswith(f"{OURS}_"))):
            if (totals := by_config.get(config)) is not None:
                label, failed = BY_KEY[config].label, totals.get(errors, 0)
                out.append(
                    f"- {provider}, {label}: {failed:g} internal errors (`{errors}`), "
                    f"{totals.get(compactions, 0):g} compactions inferred (histories only grow, so "
                    "0 is right)."
                )
    return ["", "### Checks on ours", "", *out] if out else []


def update_targets(path: Path, body: str) -> None:
    """Replace the targets table of ``path`` (or put it under the page's title)."""
    block = f"{TARGETS_BEGIN}\n{body}\n{TARGETS_END}"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    if TARGETS_BEGIN in text and TARGETS_END in text:
        head, rest = text.split(TARGETS_BEGIN, 1)
        text = head + block + rest.split(TARGETS_END, 1)[1]
    else:
        title, _, rest = text.partition("\n")
        text = f"{title}\n\n{block}\n{rest}"
    path.write_text(text)


def update_doc(path: Path, body: str, preamble: str) -> None:
    """Replace the generated block of the section in ``path``, keeping everything else."""
    block = f"{BEGIN}\n{body}\n{END}"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    elif SECTION in text:
        head, rest = text.split(SECTION, 1)
        nxt = rest.find("\n## ")
        section, tail = (rest, "") if nxt < 0 else (rest[:nxt], rest[nxt:])
        text = head + SECTION + section.rstrip("\n") + "\n\n" + block + "\n" + tail
    else:
        text = text.rstrip("\n") + f"\n\n{SECTION}\n\n{preamble}\n\n{block}\n"
    path.write_text(text)
