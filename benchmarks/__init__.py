"""The project's benchmarks by family; ``benchmarks/run`` runs each one (``python -m``)."""
