"""The demo's six scenarios and the findings each must (and must not) produce.

========================= ======================== ==================== ==========================
scenario                  conversation id          phases               compactions
========================= ======================== ==================== ==========================
``healthy``               given: ``demo-healthy``  reported             Anthropic server-side
``note000-turn30``        inferred                 inferred from tools  inferred (history rewrite)
``note000-turn34``        inferred                 inferred from tools  inferred (history rewrite)
``note004-livelock``      given                    inferred from tools  explicit, LLM summarizer
``note004-lineage-reset`` given                    inferred from tools  explicit, LLM summarizer
``two-agents``            inferred (both agents)   inferred from tools  inferred (history rewrite)
========================= ======================== ==================== ==========================

Every run is deterministic: the model's replies come from a plan, the tools'
outputs are seeded text, and the turns at which each agent compacts are part
of its script (``docs/demo.md`` tells each scenario's story).
"""

from __future__ import annotations

from otel_compaction.demo import debugging, migration
from otel_compaction.demo.scenario import Expectation, Scenario
from otel_compaction.semconv import FindingKind

BOUNDARY = FindingKind.BOUNDARY_COMPACTION
LIVELOCK = FindingKind.REEXPANSION_LIVELOCK
INEFFECTIVE = FindingKind.INEFFECTIVE_COMPACTION

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "healthy",
        "five sub-tasks, compacted server-side between them, at phase-stable points",
        f"given ({debugging.HEALTHY_ID}), phases reported",
        (Expectation("agent"),),
        debugging.healthy,
    ),
    Scenario(
        "note000-turn30",
        "boundary incident: lossy compaction at turn 30, while hypothesize -> patch straddles",
        "inferred, phases inferred",
        (Expectation("debugger", ((BOUNDARY, 30),)),),
        debugging.note000(30, debugging.SUMMARY_AT_30),
    ),
    Scenario(
        "note000-turn34",
        "boundary incident: the same run compacted at turn 34, once patch has settled",
        "inferred, phases inferred",
        (Expectation("debugger"),),
        debugging.note000(34, debugging.SUMMARY_AT_34),
    ),
    Scenario(
        "note004-livelock",
        "livelock incident: 11 summary-of-summary compactions, shrinking intervals, flat load",
        f"given ({migration.LIVELOCK_ID}), phases inferred",
        # Compactions 8 to 11: intervals 9, 7, 5, 3 and 7, 5, 3, 2 accelerate (cadence),
        # then three in a row within 3 turns (thrashing). The last three leave less than a
        # turn of room below the trigger (they reclaim almost nothing): ineffective. The one
        # at 71 bought its two calls (the next came at 73), so it is not.
        (
            Expectation(
                "migrator",
                (
                    *((LIVELOCK, turn) for turn in (71, 73, 75, 77)),
                    *((INEFFECTIVE, turn) for turn in (73, 75, 77)),
                ),
            ),
        ),
        migration.livelock,
    ),
    Scenario(
        "note004-lineage-reset",
        "livelock incident fixed: lineage reset, constraints pinned; intervals 11, 10, 12, 9",
        f"given ({migration.RESET_ID}), phases inferred",
        (Expectation("migrator"),),
        migration.lineage_reset,
    ),
    Scenario(
        "two-agents",
        "an anthropic and an openai agent interleaving calls, no ids: two conversations",
        "inferred for both, phases inferred",
        (
            Expectation("anthropic-agent"),
            Expectation("openai-agent", ((BOUNDARY, debugging.COMPACT_B),)),
        ),
        debugging.two_agents,
    ),
)
"""Every scenario, in the order the demo runs them."""

SCENARIO_NAMES = tuple(s.name for s in SCENARIOS)
