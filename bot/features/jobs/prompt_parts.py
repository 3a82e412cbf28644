"""A prompt cut into what a translation may change and what it must never touch.

Kept as written, whatever a model answers:

- the **parameters**: everything from the first ``--flag`` (or ``—flag``) on — ``--ar 16:9``,
  ``--no cars, trees``, ``--sref <url> --sw 200`` — cut off as the prompt's tail;
- **image links** (``https://…``, and ``<https://…>`` as Slack writes them), **mentions and
  platform references** (``<@U123>``, ``<#C42>``, ``<:emoji:1>``), **image references**
  (``#2``), **multi-prompt weights** (``::2``), and **permutations** (``{red, blue}``, nested,
  with their ``\\,`` escapes): those at the start of the prompt are cut off as its head, the
  others replaced by numbered placeholders ``[1]``, ``[2]``… that the translation must give
  back, each exactly once (:meth:`PromptParts.joined` refuses an answer that does not).

A ``[3]`` the user wrote is kept the same way, so a placeholder never collides with the prompt's
own text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_FLAG_RE: Final = re.compile(r"(?<!\S)(?:--|—)[A-Za-z]")
_KEPT_RE: Final = re.compile(
    r"<?https?://[^\s<>]+>?"
    r"|<[@#!:][^<>\s]*(?:\|[^<>]*)?>"
    r"|(?<!\S)#\d+(?!\S)"
    r"|::-?[\d.]*"
    r"|\[\d+\]"
)
PLACEHOLDER_RE: Final = re.compile(r"\[(\d+)\]")


class PlaceholdersLost(ValueError):
    """A translation that does not give back every placeholder exactly once (or adds one)."""


@dataclass(frozen=True)
class PromptParts:
    """A prompt as ``head`` + ``text`` + ``tail`` (see the module docstring): ``text`` is the
    natural language, with ``kept[n - 1]`` where it shows ``[n]``."""

    head: str
    text: str
    kept: tuple[str, ...]
    tail: str

    @property
    def words(self) -> str:
        """The natural language alone (placeholders left out): what detection reads."""
        return " ".join(PLACEHOLDER_RE.sub(" ", self.text).split())

    def joined(self, translated: str) -> str:
        """The prompt with ``translated`` (an answer for :attr:`text`) in place of the natural
        language and every kept piece put back; :class:`PlaceholdersLost` when ``translated``
        does not hold each placeholder exactly once."""
        found = [int(n) for n in PLACEHOLDER_RE.findall(translated)]
        if sorted(found) != list(range(1, len(self.kept) + 1)):
            raise PlaceholdersLost(
                f"expected placeholders 1 to {len(self.kept)} once each, got {found}"
            )
        body = PLACEHOLDER_RE.sub(lambda m: self.kept[int(m.group(1)) - 1], translated)
        pieces = (self.head.strip(), " ".join(body.split()), self.tail.strip())
        return " ".join(piece for piece in pieces if piece)


def _closing_brace(prompt: str, start: int) -> int | None:
    """The index of the ``}`` closing the ``{`` at ``start`` (nested groups and ``\\``
    escapes skipped), or None when it is never closed."""
    depth = 0
    index = start
    while index < len(prompt):
        char = prompt[index]
        if char == "\\":
            index += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return None


def split_prompt(prompt: str) -> PromptParts:
    """``prompt`` cut into its parts (see the module docstring)."""
    pieces: list[tuple[bool, str]] = []
    tail = ""
    text: list[str] = []
    index = 0
    while index < len(prompt):
        char = prompt[index]
        end: int | None = None
        if char == "\\" and index + 1 < len(prompt):
            text.append(prompt[index : index + 2])
            index += 2
            continue
        if char == "{":
            closing = _closing_brace(prompt, index)
            end = None if closing is None else closing + 1
        elif _FLAG_RE.match(prompt, index):
            tail = prompt[index:]
            break
        else:
            found = _KEPT_RE.match(prompt, index)
            end = found.end() if found is not None and found.end() > index else None
        if end is None:
            text.append(char)
            index += 1
            continue
        pieces += [(False, "".join(text)), (True, prompt[index:end])]
        text = []
        index = end
    pieces.append((False, "".join(text)))
    head: list[str] = []
    while pieces and (pieces[0][0] or not pieces[0][1].strip()):
        head.append(pieces.pop(0)[1])
    kept: list[str] = []
    body: list[str] = []
    for is_kept, piece in pieces:
        if is_kept:
            kept.append(piece)
            body.append(f"[{len(kept)}]")
        else:
            body.append(piece)
    return PromptParts("".join(head), "".join(body).strip(), tuple(kept), tail)
