"""The bytes of result images held at once: a hold waits until it fits, in turn; what a
delivery keeps after its download frees the rest at once; cancellations neither lose nor leak
bytes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from bot.features.jobs.held_images import HeldImages


class Holders:
    """Holds taken in tasks, each kept until released, recording the order they were granted."""

    def __init__(self, images: HeldImages) -> None:
        self.images = images
        self.granted: list[str] = []
        self.keeps: dict[str, Callable[[int], None]] = {}
        self._release: dict[str, asyncio.Event] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def start(self, name: str, most: int) -> None:
        self._release[name] = asyncio.Event()
        self.tasks[name] = asyncio.create_task(self._run(name, most))

    async def _run(self, name: str, most: int) -> None:
        async with self.images.room(most) as keep:
            self.granted.append(name)
            self.keeps[name] = keep
            await self._release[name].wait()

    async def release(self, name: str) -> None:
        self._release[name].set()
        await self.tasks[name]
        await settle()


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_holds_are_granted_while_they_fit_and_then_in_turn() -> None:
    holders = Holders(HeldImages(10))
    for name, most in (("a", 4), ("b", 4), ("c", 4), ("d", 1)):
        holders.start(name, most)
    await settle()
    assert holders.granted == ["a", "b"], "d fits, but waits behind c"
    assert holders.images.held == 8

    await holders.release("a")
    assert holders.granted == ["a", "b", "c", "d"]
    assert holders.images.held == 9


async def test_what_a_delivery_keeps_frees_the_rest_for_the_next() -> None:
    holders = Holders(HeldImages(10))
    holders.start("a", 8)
    holders.start("b", 8)
    await settle()
    assert holders.granted == ["a"]

    holders.keeps["a"](1)
    await settle()
    assert holders.granted == ["a", "b"]
    assert holders.images.held == 9

    holders.keeps["a"](5)
    assert holders.images.held == 9, "keeping never raises a hold"
    await holders.release("a")
    await holders.release("b")
    assert holders.images.held == 0


async def test_a_hold_larger_than_the_limit_waits_for_everything_and_then_goes() -> None:
    holders = Holders(HeldImages(10))
    holders.start("a", 3)
    holders.start("big", 50)
    await settle()
    assert holders.granted == ["a"]

    await holders.release("a")
    assert holders.granted == ["a", "big"]
    assert holders.images.held == 10


async def test_cancelled_waiters_neither_lose_nor_leak_bytes() -> None:
    holders = Holders(HeldImages(10))
    holders.start("a", 10)
    holders.start("gone", 5)
    holders.start("b", 5)
    await settle()
    holders.tasks["gone"].cancel()
    await settle()
    await holders.release("a")
    assert holders.granted == ["a", "b"]
    assert holders.images.held == 5

    await holders.release("b")
    assert holders.images.held == 0


async def test_a_cancelled_first_waiter_lets_the_ones_behind_it_go() -> None:
    holders = Holders(HeldImages(10))
    holders.start("a", 6)
    holders.start("big", 8)
    holders.start("small", 2)
    await settle()
    assert holders.granted == ["a"]

    holders.tasks["big"].cancel()
    await settle()
    assert holders.granted == ["a", "small"]
    assert holders.images.held == 8


async def test_a_hold_granted_to_a_waiter_cancelled_before_it_resumed_is_given_back() -> None:
    holders = Holders(HeldImages(10))
    holders.start("a", 10)
    holders.start("b", 5)
    await settle()
    assert holders.granted == ["a"]

    holders.keeps["a"](0)
    holders.tasks["b"].cancel()
    await settle()
    assert holders.granted == ["a"]
    assert holders.images.held == 0


async def test_a_result_without_images_does_not_wait_behind_images() -> None:
    holders = Holders(HeldImages(10))
    holders.start("a", 10)
    holders.start("big", 5)
    holders.start("seed", 0)
    await settle()
    assert holders.granted == ["a", "seed"]
