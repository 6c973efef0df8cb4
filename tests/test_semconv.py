"""The telemetry contract: names defined once, documented, and used only from semconv."""

from __future__ import annotations

import ast
import re
from enum import StrEnum
from pathlib import Path

import pytest

from otel_compaction import semconv

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "otel_compaction"
DOC = (ROOT / "docs" / "semantic-conventions.md").read_text(encoding="utf-8")
TELEMETRY_NAME = re.compile(r"^(gen_ai|compaction)\.[a-z0-9_]+(\.[a-z0-9_]+)*$")


def test_every_attribute_name_is_documented() -> None:
    """Each attribute, span and event name in semconv appears in the conventions page."""
    missing = sorted(n for n in semconv.all_attribute_names() if f"`{n}`" not in DOC)
    assert not missing, f"document these in docs/semantic-conventions.md: {missing}"


def test_every_metric_is_documented_with_its_prometheus_name() -> None:
    """Each metric's OTel name and Prometheus name appear in the conventions page."""
    for spec in semconv.ALL_METRICS:
        assert f"`{spec.name}`" in DOC, spec.name
        assert f"`{spec.prometheus}`" in DOC, spec.prometheus


def test_metric_names_are_unique() -> None:
    """No two metric specs share an OTel or a Prometheus name."""
    names = [s.name for s in semconv.ALL_METRICS]
    prom = [s.prometheus for s in semconv.ALL_METRICS]
    assert len(set(names)) == len(names)
    assert len(set(prom)) == len(prom)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (semconv.METRIC_COMPACTIONS, "compaction_compactions_total"),
        (semconv.METRIC_FINDINGS, "compaction_findings_total"),
        (semconv.METRIC_OPERATION_DURATION, "gen_ai_client_operation_duration_seconds"),
        (semconv.METRIC_TOKEN_USAGE, "gen_ai_client_token_usage"),
        (semconv.METRIC_LIVELOCKED, "compaction_conversations_livelocked"),
        (semconv.METRIC_INTERVAL, "compaction_cycle_interval"),
    ],
)
def test_prometheus_names_follow_the_collector_translation(
    spec: semconv.MetricSpec, expected: str
) -> None:
    """Dots become underscores, seconds get a suffix, braces are dropped, counters end _total."""
    assert spec.prometheus == expected


def test_no_unit_one() -> None:
    """Unit "1" is avoided because the SDK and the Collector translate it differently."""
    assert all(spec.unit != "1" for spec in semconv.ALL_METRICS)


def test_histograms_have_sorted_bucket_advice() -> None:
    """Every histogram carries strictly increasing explicit bucket boundaries."""
    for spec in semconv.ALL_METRICS:
        if spec.kind == "histogram":
            assert spec.buckets, spec.name
            assert list(spec.buckets) == sorted(set(spec.buckets)), spec.name


def _string_constants(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_code_uses_no_telemetry_name_outside_semconv() -> None:
    """A telemetry-looking string literal anywhere but semconv.py is a contract breach."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "semconv.py":
            continue
        for lineno, value in _string_constants(path):
            if TELEMETRY_NAME.match(value):
                offenders.append(f"{path.relative_to(ROOT)}:{lineno}: {value!r}")
    assert not offenders, "import these names from otel_compaction.semconv:\n" + "\n".join(
        offenders
    )


def test_every_finding_kind_has_a_flag() -> None:
    """Each finding kind maps to a compaction.flag.* attribute."""
    assert set(semconv.FLAG_BY_KIND) == set(semconv.FindingKind)
    assert all(v.startswith("compaction.flag.") for v in semconv.FLAG_BY_KIND.values())


def test_schema_url_is_a_released_semconv_schema_and_documented() -> None:
    """SCHEMA_URL is one the installed semantic-conventions package offers, and the doc names it."""
    from opentelemetry.semconv.schemas import Schemas

    assert semconv.SCHEMA_URL in {s.value for s in Schemas}
    assert semconv.SCHEMA_URL.endswith(f"/{semconv.SEMCONV_VERSION}")
    assert f"`{semconv.SCHEMA_URL}`" in DOC


# Official names we use that are newer than SEMCONV_VERSION (GenAI conventions in development);
# docs/semantic-conventions.md lists them under "Version".
NEWER_THAN_SCHEMA = {"gen_ai.conversation.compacted", "gen_ai.usage.cache_write.input_tokens"}


def test_official_names_are_in_the_schema_version_or_listed_as_newer() -> None:
    """Every gen_ai.* name we emit is defined by the installed conventions, or listed as newer."""
    import importlib
    import pkgutil

    import opentelemetry.semconv._incubating.attributes as incubating

    known: set[str] = set()
    for info in pkgutil.iter_modules(incubating.__path__):
        module = importlib.import_module(f"{incubating.__name__}.{info.name}")
        known.update(v for v in vars(module).values() if isinstance(v, str))
    ours = {n for n in semconv.all_attribute_names() if n.startswith("gen_ai.")}
    ours -= semconv.DIALECT_READ_NAMES  # other instrumentations' names, read and never emitted
    assert sorted(ours - known) == sorted(NEWER_THAN_SCHEMA)
    for name in NEWER_THAN_SCHEMA:
        assert f"`{name}`" in DOC


def _package_names() -> set[str]:
    """Every string the installed semantic-conventions package defines as an attribute key
    or a GenAI metric name (stable and incubating)."""
    import importlib
    import pkgutil

    import opentelemetry.semconv._incubating.attributes as incubating
    import opentelemetry.semconv.attributes as stable
    from opentelemetry.semconv._incubating.metrics import gen_ai_metrics

    names = {v for v in vars(gen_ai_metrics).values() if isinstance(v, str)}
    for package in (stable, incubating):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            names.update(v for k, v in vars(module).items() if k.isupper() and isinstance(v, str))
    return names


# The official names semconv.py spells out because the package lacks them (the rest are
# imported from it): two newer than its conventions, three other instrumentations' dialect.
SPELLED_OUT = {
    "gen_ai.conversation.compacted",
    "gen_ai.usage.cache_write.input_tokens",
    "gen_ai.usage.total_tokens",
    "gen_ai.prompt.",
    "gen_ai.completion.0.content",
}


def test_official_names_come_from_the_semantic_conventions_package() -> None:
    """semconv.py types out no key the semantic-conventions package defines; the gen_ai.*
    names it does type out are exactly those the package lacks."""
    known = _package_names()
    literals = {value for _, value in _string_constants(PACKAGE / "semconv.py")}
    assert not sorted(literals & known)
    spelled = {v for v in literals if v.startswith("gen_ai.")}
    assert spelled == SPELLED_OUT
    assert not SPELLED_OUT & known


def _enums() -> dict[str, type[StrEnum]]:
    return {
        name: value
        for name, value in vars(semconv).items()
        if isinstance(value, type) and issubclass(value, StrEnum) and value is not StrEnum
    }


# Value sets that are no attribute's: named in findings' reasons (KeySource), or a subset
# of another set (Evidence, of CompactionTrigger).
NOT_ATTRIBUTES = {"KeySource", "Evidence"}


def test_every_value_set_is_an_attributes_and_documented() -> None:
    """Each StrEnum of semconv is the value set of an attribute in VALUE_SETS (but the two
    that are no attribute's), and the conventions page lists each with all its values."""
    enums = _enums()
    assert set(enums) - NOT_ATTRIBUTES == {
        e.__name__ for e in semconv.VALUE_SETS.values() if e.__module__ == semconv.__name__
    }
    section = DOC[DOC.index("## Value sets") :]
    section = section[: section.index("\n## ")]
    for key, values in semconv.VALUE_SETS.items():
        row = next((r for r in section.splitlines() if r.startswith(f"| `{key}` |")), "")
        assert row, key
        assert all(f"`{m.value}`" in row for m in values if m.value in _emitted(key)), key
    for name in NOT_ATTRIBUTES:
        assert f"`{name}`" in section


def _emitted(key: str) -> set[str]:
    """The values of ``key``'s set we emit (all of ours; of the package's, the ones we use)."""
    values = semconv.VALUE_SETS[key]
    if values.__module__ == semconv.__name__:
        return {m.value for m in values}
    return {
        semconv.GEN_AI_OPERATION_NAME: {semconv.OPERATION_CHAT, semconv.OPERATION_INVOKE_AGENT},
        semconv.GEN_AI_PROVIDER_NAME: {semconv.PROVIDER_ANTHROPIC, semconv.PROVIDER_OPENAI},
        semconv.GEN_AI_TOKEN_TYPE: {semconv.TOKEN_TYPE_INPUT, semconv.TOKEN_TYPE_OUTPUT},
    }[key]


def test_evidence_is_a_subset_of_the_triggers() -> None:
    """An inferred compaction's evidence is written as its trigger: each is a trigger."""
    assert {e.value for e in semconv.Evidence} <= {t.value for t in semconv.CompactionTrigger}


def test_error_stages_are_the_enum_and_every_guarded_stage_is_one() -> None:
    """ERROR_STAGES is every ErrorStage (the metric is primed with it), and no guard names a
    stage by a string but the LangChain handler's, whose guard counts them as ``callback``."""
    assert tuple(semconv.ErrorStage) == semconv.ERROR_STAGES
    named = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named += [
            path.relative_to(PACKAGE).as_posix()
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "stage"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ]
    assert set(named) == {"instrument/langchain/_handler.py"}
