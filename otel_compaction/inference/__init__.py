"""Conversation and compaction inference from the histories an agent sends, free of any SDK.

Which conversation a request continues, and what a rewritten history compacted:
pure functions and one tracker over the plain message objects the agent sends
(Anthropic, OpenAI Chat Completions and Responses shapes), free of the OTel SDK,
the LLM SDKs and wrapt, like ``signals`` and ``lineage``; the instrumentation
(``otel_compaction.instrument``) feeds it every request:

- ``messages``: facts about one message (digest, sizes, tool results, summaries);
- ``rewrite``: the compaction a rewritten history shows (prune, lossy, whole history);
- ``history``: the tracker that places each request in its conversation (its parts:
  ``_placer``, ``_store``, ``_placement``, ``_summarizing``, ``_rewrites``,
  ``_replacement``; ``carry`` and ``summarizer`` the evidence they weigh).

Pure as ``signals`` is: no clock, lock, context variable, process id or time of day is
read here (the layering test checks the imports). The instrumentation gives the tracker
its clock, its lock, the caller's thread's or task's recent conversations and its ids
(``instrument._ambient``).

The rules, with their thresholds, are in ``docs/instrumentation.md`` (Conversations,
Compactions).
"""
