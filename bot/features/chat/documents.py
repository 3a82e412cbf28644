"""Documents in chat: text files and PDFs attached to a message, read into the user's turn.

A document is a text file (plain text, Markdown, CSV, JSON, source code: by its type, else its
name) or a PDF, whose text layer is read with pypdf. Its text joins the user's message, marked
with its name and what was read, so the model sees it as part of the question and later turns
keep it while it fits. Reading stops at the room the turn may take (``DocumentLimits.share`` of
what the model's context leaves once the system prompt, the message, the functions and the
answer's reserve are counted): a PDF is read page by page, a text file line by line, and
:func:`note` tells the user what was read ("read the first 38 of 120 pages of report.pdf").

Every refusal is a :class:`UserError` before anything is stored or sent: a file larger than
``max_bytes``, more than ``max_files`` documents, a file that is neither text nor PDF, a PDF that
cannot be opened or is password-protected, and a PDF with no text layer (a scan). The bytes are
read from the platform (:meth:`bot.outbox.Outbox.download`) and go nowhere but into the chat
request; the chat engine has moderation check each :class:`Read`'s text (what the model would
read of it) first.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from bot.features.chat.tokens import count_text
from bot.kernel import (
    Attachment,
    Place,
    SurfaceError,
    UserError,
    _,
    format_bytes,
    is_document,
    is_image,
    is_pdf,
    ngettext,
)
from bot.outbox import Outbox

log = logging.getLogger(__name__)

READ_TIMEOUT_SECONDS = 30.0
"""How long downloading one document, or reading its text, may take."""


@dataclass(frozen=True)
class DocumentLimits:
    """What genbot reads (``[chat] documents_*``): files up to ``max_bytes``, the first
    ``max_pages`` pages of a PDF, ``max_files`` documents per message; documents take at most
    ``share`` of the room a turn has in the model's context (the rest stays for earlier turns)."""

    max_bytes: int = 10 * 1024 * 1024
    max_pages: int = 500
    max_files: int = 5
    share: float = 0.75

    def __post_init__(self) -> None:
        if not 0 < self.share <= 1:
            raise ValueError(f"documents share lies in (0, 1], got {self.share!r}")


@dataclass(frozen=True)
class Read:
    """What was read of one document: ``text`` as the model gets it (with its header), and
    ``read`` of ``total`` ``unit`` (pages, lines)."""

    name: str
    text: str
    tokens: int
    read: int
    total: int
    unit: str
    capped: bool = False
    """Whether reading stopped at ``max_pages`` rather than at the budget."""

    @property
    def whole(self) -> bool:
        return self.read >= self.total


def unreadable(attachments: Sequence[Attachment]) -> list[Attachment]:
    """The attachments genbot can neither read nor look at (not images, not documents)."""
    return [a for a in attachments if not is_image(a) and not is_document(a)]


def refuse_unreadable(attachments: Sequence[Attachment]) -> None:
    """A :class:`UserError` naming the files genbot cannot read, if any."""
    others = unreadable(attachments)
    if not others:
        return
    names = ", ".join(a.filename for a in others[:3]) + (" …" if len(others) > 3 else "")
    raise UserError(
        _(
            "genbot cannot read {names}: it reads text files (txt, md, csv, json, source code), "
            "PDFs with a text layer, and images. Save it as one of those and send it again.",
            names=names,
        )
    )


def _header(name: str, read: int, total: int, unit: str) -> str:
    if read >= total:
        return f"--- {name} ({total} {unit if total != 1 else unit[:-1]}) ---"
    return f"--- {name} (the first {read} of {total} {unit}) ---"


def _decode(data: bytes, name: str) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    if b"\x00" in data[:8192]:
        raise UserError(_("{name} is not a text file (it holds binary data).", name=name))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


@dataclass(frozen=True)
class Extract:
    """A document's first units (pages, lines) with their tokens, as far as extraction went
    (a little past the budget it was given, or to ``max_pages``: then ``capped``)."""

    name: str
    unit: str
    units: list[tuple[str, int]]
    total: int
    capped: bool = False

    @property
    def overhead(self) -> int:
        return count_text(_header(self.name, self.total, self.total, self.unit)) + 8

    @property
    def need(self) -> int:
        """Tokens to include every extracted unit."""
        return self.overhead + sum(cost for _, cost in self.units)

    def within(self, allowance: int) -> Read:
        """The first units that fit ``allowance`` tokens."""
        kept: list[str] = []
        used = self.overhead
        for text, cost in self.units:
            if used + cost > allowance:
                break
            kept.append(text)
            used += cost
        if not kept:
            raise UserError(
                _(
                    "Not even the first page of {name} fits the model's context beside your "
                    "message; send it alone, or pick a model with a larger context.",
                    name=self.name,
                )
                if self.unit == "pages"
                else _(
                    "Not even the first line of {name} fits the model's context beside your "
                    "message; send it alone, or pick a model with a larger context.",
                    name=self.name,
                )
            )
        header = _header(self.name, len(kept), self.total, self.unit)
        text = "\n".join([header, *kept, f"--- end of {self.name} ---"])
        capped = self.capped and len(kept) == len(self.units)
        return Read(self.name, text, used, len(kept), self.total, self.unit, capped)


def extract_text(data: bytes, name: str, budget: int) -> Extract:
    """A text file's lines, from the first, until they pass ``budget`` tokens."""
    lines = _decode(data, name).splitlines()
    if not any(line.strip() for line in lines):
        raise UserError(_("{name} is empty.", name=name))
    units: list[tuple[str, int]] = []
    used = 0
    for line in lines:
        cost = count_text(line) + 1
        units.append((line, cost))
        used += cost
        if used > budget:
            break
    return Extract(name, "lines", units, len(lines))


def extract_pdf(data: bytes, name: str, budget: int, max_pages: int) -> Extract:
    """A PDF's text layer, page by page from the first, until it passes ``budget`` tokens or
    reaches ``max_pages``; a :class:`UserError` for a PDF that cannot be read or has no text."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise UserError(
                _("{name} is password-protected; send it without the password.", name=name)
            )
        pages = reader.pages
        total = len(pages)
    except PdfReadError as error:
        raise UserError(
            _("{name} could not be read as a PDF ({error}).", name=name, error=error)
        ) from None
    if total == 0:
        raise UserError(_("{name} has no pages.", name=name))
    units: list[tuple[str, int]] = []
    used = 0
    any_text = False
    for number in range(min(total, max_pages)):
        try:
            text = (pages[number].extract_text() or "").strip()
        except Exception as error:  # pypdf raises many kinds on damaged pages
            log.info("page %d of a PDF could not be read: %s", number + 1, type(error).__name__)
            text = ""
        any_text = any_text or bool(text)
        page = f"[page {number + 1}]\n{text}"
        cost = count_text(page) + 1
        units.append((page, cost))
        used += cost
        if used > budget:
            break
    if not any_text:
        raise UserError(
            _(
                "{name} has no text layer (it looks like a scan): genbot reads the text of PDFs, "
                "not pictures of pages. Run it through text recognition (OCR) first, or send the "
                "pages as images to a model that sees them.",
                name=name,
            )
        )
    capped = used <= budget and len(units) < total
    return Extract(name, "pages", units, total, capped)


def allot(needs: Sequence[int], budget: int) -> list[int]:
    """Tokens for each document: an equal share of ``budget``, what a small one leaves going
    to the others."""
    allowances = [0] * len(needs)
    left = budget
    by_need = sorted(range(len(needs)), key=lambda index: needs[index])
    for position, index in enumerate(by_need):
        allowances[index] = min(needs[index], left // (len(needs) - position))
        left -= allowances[index]
    return allowances


class DocumentReader:
    """Reads a message's documents within a token budget (see the module docstring)."""

    def __init__(
        self,
        outbox: Outbox,
        limits: DocumentLimits | None = None,
        timeout: float = READ_TIMEOUT_SECONDS,
    ) -> None:
        self.outbox = outbox
        self.limits = limits or DocumentLimits()
        self.timeout = timeout

    def check(self, documents: Sequence[Attachment]) -> None:
        """Refuse what is over the limits before anything is downloaded."""
        limits = self.limits
        if len(documents) > limits.max_files:
            raise UserError(
                ngettext(
                    "At most {n} document per message; this one has {count}.",
                    "At most {n} documents per message; this one has {count}.",
                    limits.max_files,
                    count=len(documents),
                )
            )
        for document in documents:
            if document.size is not None and document.size > limits.max_bytes:
                raise UserError(_too_large(document.filename, limits.max_bytes))

    async def read(self, place: Place, documents: Sequence[Attachment], room: int) -> list[Read]:
        """``documents`` (from ``place``'s platform) read within ``share`` of ``room`` tokens,
        shared fairly: each gets an equal part, what a short one leaves goes to the others."""
        self.check(documents)
        budget = int(max(room, 0) * self.limits.share)
        extracts: list[Extract] = []
        for document in documents:
            data = document.data
            if data is None:
                data = await self._download(place, document)
            if len(data) > self.limits.max_bytes:
                raise UserError(_too_large(document.filename, self.limits.max_bytes))
            extracts.append(await self._extract(document, data, budget))
        allowances = allot([extract.need for extract in extracts], budget)
        return [
            extract.within(allowance)
            for extract, allowance in zip(extracts, allowances, strict=True)
        ]

    async def _download(self, place: Place, document: Attachment) -> bytes:
        try:
            async with asyncio.timeout(self.timeout):
                return await self.outbox.download(place, document)
        except SurfaceError as error:
            raise UserError(
                _(
                    "genbot could not download {name}: {error}.",
                    name=document.filename,
                    error=error,
                )
            ) from None
        except TimeoutError:
            raise UserError(
                _("Downloading {name} took too long.", name=document.filename)
            ) from None

    async def _extract(self, document: Attachment, data: bytes, budget: int) -> Extract:
        name = document.filename
        if is_pdf(document):
            reading = asyncio.to_thread(extract_pdf, data, name, budget, self.limits.max_pages)
        else:
            reading = asyncio.to_thread(extract_text, data, name, budget)
        try:
            async with asyncio.timeout(self.timeout):
                return await reading
        except TimeoutError:
            raise UserError(
                _("Reading {name} took too long; send a smaller file.", name=name)
            ) from None


def _too_large(name: str, limit: int) -> str:
    return _(
        "{name} is larger than {size}, the most genbot reads.",
        name=name,
        size=format_bytes(limit),
    )


def with_documents(text: str, reads: Sequence[Read]) -> str:
    """The user's message followed by the documents' text."""
    return "\n\n".join([text, *(r.text for r in reads)] if text else [r.text for r in reads])


def note(reads: Sequence[Read], model: str, max_pages: int) -> str | None:
    """What the user is told when a document was not read whole (``None`` when all were)."""
    cut = [r for r in reads if not r.whole]
    if not cut:
        return None
    parts = ", ".join(_part_read(r) for r in cut)
    if all(r.capped for r in cut):
        return _(
            "📄 Read {parts}: genbot reads at most {pages} pages of a PDF. To ask about a later "
            "part, send that part on its own, or pick a model with a larger context.",
            parts=parts,
            pages=max_pages,
        )
    return _(
        "📄 Read {parts}: the rest does not fit {model}'s context. To ask about a later part, "
        "send that part on its own, or pick a model with a larger context.",
        parts=parts,
        model=model,
    )


def _part_read(read: Read) -> str:
    """What was read of a document not read whole, as :func:`note` lists it."""
    if read.unit == "pages":
        # Translators: in "📄 Read {parts}: …", one of the documents read in part.
        return ngettext(
            "the first {read} of {n} page of {name}",
            "the first {read} of {n} pages of {name}",
            read.total,
            read=read.read,
            name=read.name,
        )
    return ngettext(
        "the first {read} of {n} line of {name}",
        "the first {read} of {n} lines of {name}",
        read.total,
        read=read.read,
        name=read.name,
    )
