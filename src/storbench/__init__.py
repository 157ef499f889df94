"""storbench: declarative, reproducible, statistically honest storage benchmarks on real fio."""

__version__ = "0.1.0"
