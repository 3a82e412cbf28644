"""The simulator's deterministic answer rules (see ``simulator/CHAT.md``).

The answer depends only on (seed, messages, choice index): the same conversation under the same
``--seed`` always gets the same words. Rules, first match wins:

1. last message has role ``function`` → the answer quotes that function result;
2. a system message asks for a translation into English → the last user message translated
   by a phrase table (:mod:`simulator.chat_translation`);
3. last user message contains ``echo: <text>`` → exactly ``<text>``;
4. ``words: N`` → exactly N words;
5. ``code: N`` → a sentence, a fenced python block of N lines, a sentence;
6. ``what was my first message`` → quotes the first user message verbatim;
7. the last user message has images (vision model) → names the images and the text given;
8. otherwise a readable, clearly simulated answer quoting the user's words.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import asdict

from simulator.chat_functions import last_user_message
from simulator.chat_translation import asks_translation, translated
from simulator.chat_validation import ChatMessage, ChatRequest

MAX_WORDS = 5000
MAX_CODE_LINES = 500
QUOTED_WORDS = 12


def _split_words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_ECHO = re.compile(r"echo: ?", re.IGNORECASE)
_WORDS = re.compile(r"\bwords:\s*(\d+)", re.IGNORECASE)
_CODE = re.compile(r"\bcode:\s*(\d+)", re.IGNORECASE)
_FIRST_MESSAGE = "what was my first message"
_KEYWORD = re.compile(r"[^\W\d_]{4,}")
_FILLER_WORDS = frozenset(
    _split_words(
        "hello there what which where when would could should about please thanks thank "
        "with this that these those have your from into them they their just like "
        "suggest explain describe tell give show help know want need make"
    )
)

_OPENINGS = (
    'This is a simulated answer to "{quote}".',
    'You asked: "{quote}". Here is what the simulator has to say.',
    'Simulated reply to "{quote}".',
    'Thanks for your message, "{quote}". This answer is simulated.',
    'Let\'s look at "{quote}" (simulated answer).',
)
_BODY = (
    "A real model would think hard about {keyword}; this simulator only pretends to, "
    "so treat the details as placeholders.",
    "The words you are reading are chosen deterministically, so the same conversation "
    "and seed always give this exact answer.",
    "No language model was involved: the simulator stitches this reply together from "
    "fixed phrases and your message.",
    "When it comes to {keyword}, a good answer would weigh a few options before recommending one.",
    "Short answers keep tests fast, which is why this one stays brief.",
    "If you want a predictable shape, ask with `echo: <text>`, `words: N` or `code: N`.",
)
_POINTS = (
    "start with the simplest option",
    "check the assumptions first",
    "compare two alternatives side by side",
    "write down what success looks like",
    "ask someone who has done it before",
    "keep a note of what you tried",
)
_CLOSINGS = (
    "Ask a follow-up and the simulated answer will change.",
    "Hope this (simulated) answer helps.",
    "That is all the simulator knows for now.",
    "Feel free to rephrase: every different prompt gets a different reply.",
)
_VOCABULARY = _split_words(
    "simulated answer river light quiet model token stream garden signal paper window "
    "morning careful bright simple table number orange travel music system letter "
    "green useful little north story planet circle friendly gentle copper harbor "
    "lantern meadow pattern ribbon silver timber velvet wonder yellow anchor basket "
    "candle"
)


def _rng(seed: int, request: ChatRequest, choice_index: int) -> random.Random:
    material = json.dumps(
        [seed, choice_index, [asdict(m) for m in request.messages]],
        sort_keys=True,
        ensure_ascii=False,
    )
    return random.Random(int.from_bytes(hashlib.sha256(material.encode()).digest()[:8], "big"))


def one_line(text: str) -> str:
    return " ".join(text.split())


def compose_answer(request: ChatRequest, seed: int, choice_index: int) -> str:
    """The full text answer (before stop sequences and ``max_tokens`` apply)."""
    rng = _rng(seed, request, choice_index)
    last = request.messages[-1]
    if last.role == "function":
        return _function_result_answer(last, rng)
    user = last_user_message(request)
    text = (user.text or "") if user else ""
    if asks_translation(request):
        return translated(text)
    echo = _ECHO.search(text)
    if echo:
        return text[echo.end() :]
    words = _WORDS.search(text)
    if words:
        return _words_answer(min(int(words.group(1)), MAX_WORDS), rng)
    code = _CODE.search(text)
    if code:
        return _code_answer(max(1, min(int(code.group(1)), MAX_CODE_LINES)), rng)
    if _FIRST_MESSAGE in text.lower():
        first = next(m for m in request.messages if m.role == "user")
        return f'Your first message was: "{first.text or ""}"'
    if user is not None and user.image_urls:
        return _vision_answer(user)
    return _generic_answer(text, rng)


def _words_answer(count: int, rng: random.Random) -> str:
    if count == 0:
        return ""
    words = [rng.choice(_VOCABULARY) for _ in range(count)]
    words[0] = words[0].capitalize()
    words[-1] += "."
    return " ".join(words)


def _code_answer(lines: int, rng: random.Random) -> str:
    if lines == 1:
        body = [f'print("simulated {rng.choice(_VOCABULARY)}")']
    else:
        body = [f"step_1 = {rng.randint(1, 9)}"]
        body += [f"step_{i} = step_{i - 1} + {rng.randint(1, 9)}" for i in range(2, lines)]
        body.append(f"print(step_{lines - 1})")
    block = "\n".join(body)
    unit = "line" if lines == 1 else "lines"
    return (
        f"Here is a simulated Python snippet of {lines} {unit}:\n\n```python\n{block}\n```\n\n"
        "It only shows the shape of an answer; the simulator does not run code."
    )


def _quote(text: str) -> str:
    words = one_line(text).split(" ")
    if len(words) > QUOTED_WORDS:
        return " ".join(words[:QUOTED_WORDS]) + "…"
    return " ".join(words).rstrip(".!?;:,") or one_line(text)


def _keyword(text: str) -> str:
    """The longest word of the message that is not a filler word (later words win ties)."""
    candidates: list[str] = [w for w in _KEYWORD.findall(text) if w.lower() not in _FILLER_WORDS]
    if not candidates:
        return one_line(text)[:40]
    longest = max(len(w) for w in candidates)
    word = [w for w in candidates if len(w) == longest][-1]
    return word if word.isupper() else word.lower()


def _generic_answer(text: str, rng: random.Random) -> str:
    if not text.strip():
        return (
            "This is a simulated answer. There is no user message to respond to yet, "
            "so the simulator can only say hello."
        )
    keyword = _keyword(text)
    opening = rng.choice(_OPENINGS).format(quote=_quote(text))
    first, second = rng.sample(_BODY, 2)
    paragraphs = [f"{opening} {first.format(keyword=keyword)}"]
    shape = rng.randrange(4)
    if shape == 1:
        points = rng.sample(_POINTS, 3)
        bullets = "\n".join(f"- {p.capitalize()}." for p in points)
        paragraphs.append(f"Three simulated points about **{keyword}**:\n\n{bullets}")
    elif shape == 2:
        steps = rng.sample(_POINTS, 3)
        numbered = "\n".join(f"{i}. {s.capitalize()}." for i, s in enumerate(steps, 1))
        paragraphs.append(f"A simulated plan:\n\n{numbered}")
    elif shape == 3:
        paragraphs.append(f"**In short:** {second.format(keyword=keyword)}")
    else:
        paragraphs.append(second.format(keyword=keyword))
    paragraphs.append(rng.choice(_CLOSINGS))
    return "\n\n".join(paragraphs)


def _describe_url(url: str) -> str:
    if url.startswith("data:"):
        return f"an inline {url[5 : url.find(';')]} image"
    return url


def _vision_answer(message: ChatMessage) -> str:
    urls = [_describe_url(u) for u in message.image_urls]
    listed = urls[0] if len(urls) == 1 else ", ".join(urls[:-1]) + " and " + urls[-1]
    noun = "image" if len(urls) == 1 else "images"
    text = one_line(message.text or "")
    given = f'and your text: "{text}"' if text else "and no text"
    return (
        f"I see {len(urls)} {noun}: {listed}, {given}. "
        "(Simulated vision answer: no pixels were actually looked at.)"
    )


def _function_result_answer(message: ChatMessage, rng: random.Random) -> str:
    content = message.text or ""
    longest_run = max((len(run) for run in re.findall(r"`+", content)), default=0)
    fence = "`" * max(3, longest_run + 1)
    closing = rng.choice(_CLOSINGS)
    return (
        f"The function `{message.name}` returned:\n\n{fence}\n{content}\n{fence}\n\n"
        f"(Simulated answer built from that result.) {closing}"
    )
