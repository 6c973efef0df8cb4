"""Known limits: why an outcome of a class is below 100% today, one sentence each.

Keyed by ``(class, outcome)``; ``"*"`` as the class covers every class. The benchmark
attaches the reason to every cell below 100% in docs/detection.md, and the CI test
fails on a miss of its sampled runs that has no reason here. When the engine fixes
one, delete its entry: the cell reaches 100% and the doc stops naming it.
"""

from __future__ import annotations

WHOLE_ONE_CALL = (
    "one summary in place of the whole history one call after the task: the tracker saw the "
    "task and one reply only (the tool output the summary reports was never sent), so a "
    "summary that does not restate the task whole carries nothing a fresh task written from "
    "the same template would not, and stays a new conversation "
    "(docs/instrumentation.md#conversations); one that restates it keeps what was dropped, "
    "so the rule calls it extractive where the harness says lossy."
)
ONE_CALL = (
    "a compaction one call after the previous request is found when the conversation was "
    "at pressure (docs/instrumentation.md#compactions, one call after the last); the misses "
    "left are the whole-history replacements below."
)
TWINS = (
    "the twins' first calls are identical in request and reply, so nothing tells them apart: "
    "they may be swapped between the two conversations, and a later rewrite can go to the "
    "twin that kept as much (docs/instrumentation.md#conversations)."
)
CLEARING = (
    "a tool result shortened in place is looked for only when the measured context falls "
    "below the last one plus 75% of the new messages' estimate (REREAD_SHARE, so a "
    "prose-heavy agent is not reread every call): a clear smaller than a quarter of what the "
    "call adds is hidden in that margin."
)
FOLLOWS_FOUND = "follows found: a compaction that is not found has no outcome to score."
INEFFECTIVE_TRUTH = (
    "the engine estimates the size before a client-side rewrite (the last call's context plus "
    "the new messages' estimate) and the turns a compaction bought (the room below the "
    "trigger in turns of the cycle's growth); the harness counts both: investigate the seed."
)
NOT_FOUND = "the compactions are mostly not found (see found)."
RESPONSES_DEFERRED = (
    "on the Responses wires, a compaction item returned by responses.create is observed with "
    "the next call: the compacting call's usage may count the context before or after it "
    "(docs/instrumentation.md#compactions), so the next call's input gives the size after and "
    "the compaction takes that call's turn, one after the harness's; the Anthropic wires, "
    "whose usage says, score 100%. Placing it on its own call with the size settled one call "
    "later needs the engine to settle a compaction on a later turn than its own."
)
TEMPLATE = (
    "a summary written in a fixed template (Claude Code's nine headings) shares its headings "
    "and the restated task with every other summary of the conversation: an earlier one with "
    "three findings is 58% template, above the 0.5 carry-over, so a fresh summary reads as "
    "carrying it (docs/detectors.md#lineage). Over 40 runs a class a fresh summary shares "
    "0.24 to 0.42 of the earlier one, a carried one all of it; the generator carries "
    "verbatim where a model paraphrases, so the gap gives no ground for a higher threshold."
)

KNOWN_LIMITS: dict[tuple[str, str], str] = {
    ("server_side", "found"): RESPONSES_DEFERRED,
    ("server_side", "mode"): RESPONSES_DEFERRED,
    ("server_side", "generation"): RESPONSES_DEFERRED,
    ("server_side", "boundary_compaction"): RESPONSES_DEFERRED,
    ("*", "size_after"): FOLLOWS_FOUND,
    ("*", "summary_schema_coverage"): FOLLOWS_FOUND,
    ("*", "ineffective_compaction"): INEFFECTIVE_TRUTH,
    ("*", "determinism"): (
        "spans differ between processes of different PYTHONHASHSEED: a hash or set order "
        "decides telemetry (a bug; none is known since shingles are hashed the same in "
        "every process)."
    ),
    ("*", "reexpansion_livelock"): (
        "two ineffective compactions in a row are a no-progress livelock in the engine (issue "
        "18); the harness's truth has livelock only where the cadence accelerates, and counts "
        "fewer compactions ineffective (see ineffective)."
    ),
    # classes whose misses have a cause of their own
    ("fixed_prefix", "found"): f"{ONE_CALL} With one summary in place of all: {WHOLE_ONE_CALL}",
    ("fixed_prefix", "mode"): f"{NOT_FOUND} {WHOLE_ONE_CALL}",
    ("fixed_prefix", "generation"): NOT_FOUND,
    (
        "fixed_prefix",
        "conversation",
    ): f"{ONE_CALL} With one summary in place of all: {WHOLE_ONE_CALL}",
    ("fixed_prefix", "boundary_compaction"): NOT_FOUND,
    ("fixed_prefix", "reexpansion_livelock"): NOT_FOUND,
    ("fixed_prefix", "ineffective_compaction"): NOT_FOUND,
    ("in_place_clearing", "found"): CLEARING,
    ("in_place_clearing", "mode"): CLEARING,
    ("identical_replies", "found"): TWINS,
    ("identical_replies", "mode"): TWINS,
    ("identical_replies", "generation"): TWINS,
    ("identical_replies", "conversation"): TWINS,
    ("identical_replies", "ineffective_compaction"): TWINS,
    ("short_run", "generation"): TEMPLATE,
    ("identical_replies", "boundary_compaction"): TWINS,
    ("identical_replies", "reexpansion_livelock"): TWINS,
}

UNEXPLAINED = "(no known limit recorded: investigate)"


def reason_for(name: str, outcome: str) -> str:
    """The recorded reason for ``outcome`` of class ``name``, or :data:`UNEXPLAINED`."""
    return KNOWN_LIMITS.get((name, outcome)) or KNOWN_LIMITS.get(("*", outcome)) or UNEXPLAINED
