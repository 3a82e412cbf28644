"""What counts as a document: text files and PDFs, by type, else by name."""

from __future__ import annotations

from bot.kernel import Attachment, is_document


def text_file(name: str, content_type: str | None = None) -> Attachment:
    return Attachment(name, content_type=content_type)


def test_what_is_a_document() -> None:
    assert is_document(text_file("notes.txt", "text/plain; charset=utf-8"))
    assert is_document(text_file("data.csv"))
    assert is_document(text_file("main.rs", "application/octet-stream"))
    assert is_document(text_file("config.json", "application/json"))
    assert is_document(Attachment("report.pdf"))
    assert not is_document(Attachment("fox.png", content_type="image/png"))
    assert not is_document(Attachment("archive.zip", content_type="application/zip"))
