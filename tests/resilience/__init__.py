"""Resilience tests: crash and restart, provider faults, bad input, security (issue 8, 5–8)."""
