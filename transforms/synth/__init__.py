"""Synthetic KnowledgePulse traces at fleet scale, for the demo, tests and benchmarks."""
