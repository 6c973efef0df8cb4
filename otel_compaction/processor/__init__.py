"""processor."""
