"""Python's garbage collector, set for a process that serves for hours.

With the interpreter's defaults (a young-generation collection every 700 net allocations, a
full one after ten of the middle generation's), a busy genbot spent about a tenth of its CPU
collecting, most of it in full collections of 120–230 ms each. The event loop stops while one
runs, so a burst of results lost whole platform write windows to them (docs/benchmarks.md §6,
ninth round). Objects that outlive an ``await`` are the norm in an asyncio server, so the young
generation's survivors were promoted in large numbers and every full collection walked them,
with every module, class and function imported at startup.

:func:`settle_for_serving` runs once startup is over: it collects what startup left, freezes
what remains (:func:`gc.freeze`: never scanned again, never freed, which is what a module or
a class is anyway), and collects the young generation every ``SERVING_THRESHOLDS[0]`` net
allocations rather than 700, so far fewer survivors reach the old generation. Reference
cycles made later are still collected, only less often: a young collection still runs within a
few milliseconds of a busy process's work. What startup made is never freed, even once it is
garbage (a connection made at startup and replaced on a reconnect): a bounded, one-time cost.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)

SERVING_THRESHOLDS = (10_000, 20, 20)
"""``gc.set_threshold`` for a serving process: net allocations between young collections, then
how many collections of each generation before the next one's."""


def settle_for_serving() -> int:
    """Set the collector for serving (see the module docstring), once startup is over; returns
    how many objects were frozen."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVING_THRESHOLDS)
    frozen = gc.get_freeze_count()
    log.info(
        "garbage collector set for serving: %d startup objects frozen, thresholds %s",
        frozen,
        SERVING_THRESHOLDS,
    )
    return frozen
