"""genbot's benchmarks: ``python -m bench [name ...] [--quick]`` (``make bench`` runs them all).

Each benchmark compares genbot with baselines implemented here, in the same run, and prints a
table; none asserts times.
"""
