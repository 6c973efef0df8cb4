"""Driver scripts: each runs one framework for real in its own environment (see ``venvs``)."""
