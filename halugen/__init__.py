"""halugen: build and run hallucination benchmarks for LLMs."""

__version__ = "0.1.0"
