"""PDFs made in tests, and what a chat request that read the 300-page report shows.

A made PDF is a valid PDF 1.4 file whose pages show given lines of text (Helvetica), or no text
at all (a grey rectangle, as a scanned page shows a picture). Small and fast: a 300-page
document is about 120 KB and takes milliseconds."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from bot.features.chat.requests import ChatDefaults
from bot.features.chat.tokens import context_size, count_messages

PAGE = re.compile(r"^\[page (\d+)\]$", re.MULTILINE)


def _escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _content(lines: Sequence[str] | None) -> bytes:
    if lines is None:
        return b"0.5 g 72 72 468 648 re f"
    shown = " T* ".join(f"({_escape(line)}) Tj" for line in lines)
    return f"BT /F1 11 Tf 72 720 Td 14 TL {shown} ET".encode("latin-1")


def make_pdf(pages: Sequence[Sequence[str] | None]) -> bytes:
    """A PDF with one page per item: its lines of text, or ``None`` for a page without text."""
    count = len(pages)
    kids = " ".join(f"{4 + 2 * index} 0 R" for index in range(count))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for index, lines in enumerate(pages):
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * index} 0 R >>".encode()
        )
        stream = _content(lines)
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def report(pages: int) -> bytes:
    """A report of ``pages`` pages, each naming its number and a fact found only there."""
    return make_pdf(
        [
            [
                f"Report page {number}.",
                f"On page {number} the lighthouse keeper counted {number * 7} ships.",
                "The weather was calm and the lamp was cleaned twice that day.",
            ]
            for number in range(1, pages + 1)
        ]
    )


def scan(pages: int) -> bytes:
    """A PDF of ``pages`` pictures and no text layer."""
    return make_pdf([None] * pages)


def read_of_report(body: dict[str, Any], question: str, note: str) -> list[int]:
    """The pages of :func:`report` (300 pages) a chat request ``body`` carries after
    ``question``: the first ones, in order, and not all, within the model's context with room
    for the answer; ``note`` (genbot's) says how many. Fails the test otherwise."""
    asked = body["messages"][-1]["content"]
    assert asked.startswith(f"{question}\n\n--- report.pdf (the first "), asked[:200]
    pages = [int(number) for number in PAGE.findall(asked)]
    assert pages == list(range(1, len(pages) + 1)) and 5 < len(pages) < 300
    last = pages[-1]
    assert f"On page {last} the lighthouse keeper counted {last * 7} ships." in asked
    assert f"[page {last + 1}]" not in asked
    room = context_size(body["model"]) - ChatDefaults().answer_reserve
    assert count_messages(body["messages"]) <= room
    assert note.startswith(f"📄 Read the first {len(pages)} of 300 pages of report.pdf"), note
    return pages
