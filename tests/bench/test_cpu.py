"""CPU seconds from /proc: a process's own, and a server's with its children."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from bench.cpu import cpu_seconds, server_cpu_seconds

BURN = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"


def test_a_server_counts_its_live_and_reaped_children() -> None:
    before = server_cpu_seconds(os.getpid())
    done = subprocess.run([sys.executable, "-c", BURN], check=True)
    assert done.returncode == 0
    reaped = server_cpu_seconds(os.getpid()) - before
    assert reaped >= 0.25, "the reaped child's CPU is counted"

    child = subprocess.Popen([sys.executable, "-c", BURN + "\ntime.sleep(30)"])
    try:
        deadline = time.monotonic() + 30
        while cpu_seconds(child.pid) < 0.25 and time.monotonic() < deadline:
            time.sleep(0.05)
        live = cpu_seconds(child.pid)
        assert live >= 0.25
        assert server_cpu_seconds(os.getpid()) - before >= reaped + live - 0.05
    finally:
        child.kill()
        child.wait()
    assert cpu_seconds(child.pid) == 0.0, "a process that is gone has used nothing more"
