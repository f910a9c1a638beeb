"""Tools that measure the scheduler, each run as ``python -m benchmarks.<name>`` from the checkout root (benchmarks/README.md)."""
