"""Telemetry beside every number: /proc samplers, Ceph admin-socket counters, Prometheus queries.

Pure modules turn raw readings into series and summaries; ``sources`` (the sampler thread) and
``recorder`` are the shell.
"""
