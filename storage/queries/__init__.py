"""One class per port (or two), each query written once for both backends."""
