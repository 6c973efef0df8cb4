"""Detection against scripted agents whose compactions are known: the harness and its report."""
