"""Executors: run fio jobs (locally; later on many hosts and in Kubernetes pods)."""
