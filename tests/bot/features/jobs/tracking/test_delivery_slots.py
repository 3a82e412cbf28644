"""The delivery slots: taken at once while free; when deliveries wait, a freed slot goes to the
channel with the fewest under way, first come first served within a channel; cancellations
neither lose nor leak a slot."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable

from bot.features.jobs.tracking.delivery_slots import DeliverySlots


class Deliveries:
    """Deliveries holding their slots until released, recording the order they got them."""

    def __init__(self, slots: DeliverySlots) -> None:
        self.slots = slots
        self.started: list[str] = []
        self._release: dict[str, asyncio.Event] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def start(self, name: str, channel: Hashable) -> None:
        self._release[name] = asyncio.Event()
        self.tasks[name] = asyncio.create_task(self._run(name, channel))

    async def _run(self, name: str, channel: Hashable) -> None:
        async with self.slots.slot(channel):
            self.started.append(name)
            await self._release[name].wait()

    async def release(self, name: str) -> None:
        self._release[name].set()
        await self.tasks[name]
        await settle()


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_free_slots_are_taken_at_once_whatever_the_channel() -> None:
    deliveries = Deliveries(DeliverySlots(3))
    for name in ("a1", "a2", "a3"):
        deliveries.start(name, "a")
    await settle()

    assert deliveries.started == ["a1", "a2", "a3"]
    assert deliveries.slots.busy == 3 and deliveries.slots.waiting == 0


async def test_a_freed_slot_goes_to_the_channel_with_the_fewest_under_way() -> None:
    deliveries = Deliveries(DeliverySlots(2))
    for name, channel in (("a1", "a"), ("a2", "a"), ("a3", "a"), ("a4", "a"), ("b1", "b")):
        deliveries.start(name, channel)
    await settle()
    assert deliveries.started == ["a1", "a2"]

    await deliveries.release("a1")
    assert deliveries.started[2:] == ["b1"], "b waited behind a's queue"
    await deliveries.release("a2")
    await deliveries.release("b1")
    assert deliveries.started[3:] == ["a3", "a4"], "first come, first served within a channel"


async def test_channels_with_as_many_under_way_take_turns() -> None:
    deliveries = Deliveries(DeliverySlots(1))
    deliveries.start("x", "x")
    for name, channel in (("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b"), ("c1", "c")):
        deliveries.start(name, channel)
    await settle()

    for name in ("x", "a1", "b1", "c1", "a2"):
        await deliveries.release(name)

    assert deliveries.started == ["x", "a1", "b1", "c1", "a2", "b2"]


async def test_a_wait_cancelled_before_its_turn_is_skipped() -> None:
    deliveries = Deliveries(DeliverySlots(1))
    deliveries.start("a1", "a")
    deliveries.start("b1", "b")
    deliveries.start("c1", "c")
    await settle()

    deliveries.tasks["b1"].cancel()
    await deliveries.release("a1")

    assert deliveries.started == ["a1", "c1"]
    await deliveries.release("c1")
    assert deliveries.slots.busy == 0 and deliveries.slots.waiting == 0


async def test_a_delivery_cancelled_as_its_turn_came_passes_the_slot_on() -> None:
    slots = DeliverySlots(1)
    deliveries = Deliveries(slots)
    async with slots.slot("x"):
        deliveries.start("b1", "b")
        deliveries.start("c1", "c")
        await settle()
    deliveries.tasks["b1"].cancel()
    await settle()

    assert deliveries.started == ["c1"]
    assert slots.busy == 1 and slots.waiting == 0
    await deliveries.release("c1")
    assert slots.busy == 0
