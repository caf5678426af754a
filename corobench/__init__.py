"""corobench: a verified, repeatable benchmark suite for concurrency runtimes."""

__version__ = "0.1.0"
