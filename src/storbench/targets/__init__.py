"""Targets: check and prepare where the I/O goes (shell), with pure guards."""
