"""A small reader of Dockerfile instructions: enough to check genbot's own Dockerfile."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str

    def words(self) -> list[str]:
        """The arguments as a list: JSON (exec) form, else shell words."""
        text = self.arguments.strip()
        if text.startswith("["):
            parsed = json.loads(text)
            assert isinstance(parsed, list)
            return [str(word) for word in parsed]
        return shlex.split(text)


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def instructions(text: str) -> list[Instruction]:
    """The instructions of a Dockerfile, continuation lines joined, comments dropped."""
    found: list[Instruction] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole = pending + line
        pending = ""
        keyword, _, arguments = whole.partition(" ")
        found.append(Instruction(keyword.upper(), arguments.strip()))
    return found


def stages(text: str) -> list[Stage]:
    """The build stages, each with its instructions (``ARG`` values substituted in ``FROM``)."""
    args: dict[str, str] = {}
    result: list[Stage] = []
    for instruction in instructions(text):
        if instruction.keyword == "ARG" and not result:
            name, _, default = instruction.arguments.partition("=")
            args[name] = default
        elif instruction.keyword == "FROM":
            words = instruction.arguments.split()
            base = words[0]
            for name, value in args.items():
                base = base.replace("${" + name + "}", value)
            alias = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            result.append(Stage(base, alias))
        else:
            result[-1].instructions.append(instruction)
    return result
