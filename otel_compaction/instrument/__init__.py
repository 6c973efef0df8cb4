"""instrument."""
