"""The processor: throughput behind the real Collector, its path in one process, snapshots."""
