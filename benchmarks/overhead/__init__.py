"""Time the instrumentation adds to an LLM call, ours against the other instrumentations."""
