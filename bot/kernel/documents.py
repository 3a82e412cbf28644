"""What genbot reads as a document in chat: text files (plain text, Markdown, CSV, JSON, source
code) and PDFs, by their type, else their name. Adapters ask it which uploads to take besides
images (the playground); the chat engine reads them (:mod:`bot.features.chat.documents`)."""

from __future__ import annotations

from pathlib import PurePosixPath

from bot.kernel.events import Attachment

TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/x-ndjson",
        "application/xml",
        "application/javascript",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
    }
)
TEXT_EXTENSIONS = frozenset(
    [
        ".txt",
        ".text",
        ".md",
        ".markdown",
        ".rst",
        ".csv",
        ".tsv",
        ".json",
        ".jsonl",
        ".ndjson",
        ".yaml",
        ".yml",
        ".toml",
        ".xml",
        ".html",
        ".htm",
        ".log",
        ".ini",
        ".cfg",
        ".conf",
        ".env",
        ".py",
        ".pyi",
        ".js",
        ".mjs",
        ".ts",
        ".tsx",
        ".jsx",
        ".java",
        ".kt",
        ".kts",
        ".scala",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".cs",
        ".go",
        ".rs",
        ".rb",
        ".php",
        ".pl",
        ".lua",
        ".r",
        ".swift",
        ".m",
        ".sh",
        ".bash",
        ".zsh",
        ".ps1",
        ".sql",
        ".css",
        ".scss",
        ".vue",
        ".svelte",
        ".tex",
        ".diff",
        ".patch",
        ".proto",
        ".graphql",
        ".dockerfile",
        ".makefile",
        ".gradle",
    ]
)
"""Names read as text when the platform gives no type (or a generic one)."""
PDF_TYPE = "application/pdf"


def _extension(filename: str) -> str:
    path = PurePosixPath(filename.lower())
    return path.suffix or (f".{path.name}" if path.name in {"dockerfile", "makefile"} else "")


def _content_type(attachment: Attachment) -> str:
    return (attachment.content_type or "").split(";", 1)[0].strip().lower()


def is_pdf(attachment: Attachment) -> bool:
    return _content_type(attachment) == PDF_TYPE or _extension(attachment.filename) == ".pdf"


def is_document(attachment: Attachment) -> bool:
    """Whether genbot reads ``attachment`` as a document (a text file or a PDF)."""
    kind = _content_type(attachment)
    if is_pdf(attachment) or kind.startswith("text/") or kind in TEXT_TYPES:
        return True
    return _extension(attachment.filename) in TEXT_EXTENSIONS
