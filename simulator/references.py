"""Image references in an imagine prompt, as the simulator reads them (``simulator/README.md``,
"References"): image URLs at the start of the prompt, ``--sref`` (URLs or style codes),
``--cref`` and ``--oref`` URLs, and the weights ``--iw`` (0–3), ``--sw`` (0–1000) and ``--cw``
(0–100). Each reference URL is fetched when the task is created; one that cannot be fetched
(not an image, an error status, no answer) fails the task, as a provider that must read it
would."""

from __future__ import annotations

import asyncio
import math
import re

import aiohttp

from simulator.task_rules import RuleError

FETCH_SECONDS = 10.0
MAX_REFERENCE_BYTES = 32 * 1024 * 1024
REFERENCE_FLAGS = ("--sref", "--cref", "--oref")
WEIGHT_RANGES = {"--iw": (0.0, 3.0), "--sw": (0.0, 1000.0), "--cw": (0.0, 100.0)}
_URL = re.compile(r"https?://\S+", re.IGNORECASE)
_STYLE_CODE = re.compile(r"[0-9]{1,12}|random", re.IGNORECASE)


def reference_urls(prompt: str) -> tuple[str, ...]:
    """The reference URLs of ``prompt`` in order (image prompts, then flags' values); a weight
    out of its range is refused (400)."""
    words = prompt.split()
    urls: list[str] = []
    leading = True
    flag = ""
    for position, word in enumerate(words):
        lowered = word.lower()
        if lowered in WEIGHT_RANGES:
            _check_weight(lowered, words[position + 1] if position + 1 < len(words) else "")
        if lowered.startswith("--"):
            flag = lowered if lowered in REFERENCE_FLAGS else ""
            leading = False
            continue
        if _URL.fullmatch(word) and (leading or flag):
            urls.append(word.split("::", 1)[0])
            continue
        if flag == "--sref" and _STYLE_CODE.fullmatch(word):
            continue
        leading = False
        flag = ""
    return tuple(urls)


def _check_weight(flag: str, value: str) -> None:
    low, high = WEIGHT_RANGES[flag]
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not low <= number <= high:
        raise RuleError(f"{flag} must be a number from {low:g} to {high:g} (got {value!r})")


async def unfetchable(urls: tuple[str, ...]) -> str | None:
    """Why one of ``urls`` cannot be read as an image (the first that fails), else None."""
    if not urls:
        return None
    timeout = aiohttp.ClientTimeout(total=FETCH_SECONDS)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        reasons = await asyncio.gather(*(_fetch(session, url) for url in urls))
    return next((reason for reason in reasons if reason is not None), None)


async def _fetch(session: aiohttp.ClientSession, url: str) -> str | None:
    try:
        async with session.get(url) as response:
            if response.status != 200:
                return f"reference image {url} could not be fetched (HTTP {response.status})"
            kind = response.headers.get("Content-Type", "")
            if not kind.lower().startswith("image/"):
                return f"reference {url} is not an image ({kind or 'no content type'})"
            body = await response.content.read(MAX_REFERENCE_BYTES + 1)
            if not body or len(body) > MAX_REFERENCE_BYTES:
                return f"reference image {url} is empty or too large"
    except (aiohttp.ClientError, TimeoutError, ValueError) as error:
        return f"reference image {url} could not be fetched ({type(error).__name__})"
    return None
