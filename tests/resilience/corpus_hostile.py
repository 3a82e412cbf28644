"""Bad input found by the red team (issue 13), added to :mod:`tests.resilience.corpus`: text
that is not plain text (control characters, bidirectional overrides, nothing visible), seeds
out of range, flags without their value, and hostile image files attached to chat commands or
uploaded to the playground."""

from __future__ import annotations

from bot.kernel import Attachment
from tests.resilience.corpus import TXT2IMG, CoreCase, WebCase, options, text
from tests.resilience.hostile_files import (
    bomb_png,
    damaged_jpeg,
    html_gif,
    noise_png,
    truncated_png,
)

TEXT_HYGIENE_CASES = [
    text("imagine-prompt-nul", "imagine", "a fox\x00 in the snow", "the prompt", "NUL", "U+0000"),
    text("imagine-prompt-bel", "imagine", "a fox \x07 barking", "BEL", "U+0007"),
    text("imagine-prompt-esc", "imagine", "a \x1b[31mred\x1b[0m fox", "ESC", "U+001B"),
    text("imagine-prompt-del", "imagine", "a fox\x7f", "DEL"),
    options(
        "imagine-prompt-bidi-override",
        "imagine",
        {"prompt": "a fox \u202egnp.exe"},
        "bidirectional override",
        "U+202E",
    ),
    text("imagine-prompt-bidi-isolate", "imagine", "a fox \u2067x\u2069", "U+2067"),
    text("imagine-prompt-only-zero-width", "imagine", "\u200b\u200c\u200d", "only invisible"),
    options("chat-prompt-only-word-joiners", "chat", {"prompt": "\u2060\ufeff"}, "only invisible"),
    text("chat-prompt-nul", "chat", "hello\x00there", "NUL"),
    text("chat-system-esc", "chat", 'hi --system "be \x1b[2J quiet"', "--system", "ESC"),
    text("txt2img-negative-prompt-bel", TXT2IMG, "a fox --neg \x07", "BEL"),
    text("describe-url-with-nul", "describe", "https://example.org/a.png\x00", "NUL"),
]

PROMPT_FLAG_CASES = [
    text("imagine-seed-negative", "imagine", "a fox --seed -5", "--seed", "0 to 4294967295"),
    text(
        "imagine-seed-beyond-32-bits",
        "imagine",
        "a fox --seed 99999999999",
        "--seed",
        "0 to 4294967295",
    ),
    text("imagine-seed-word", "imagine", "a fox --seed lucky", "--seed", "whole number"),
    text("imagine-sameseed-negative", "imagine", "a fox --sameseed -1", "--sameseed"),
    text("imagine-dangling-no", "imagine", "a fox --no", "--no needs a value", "--no cars"),
    text("imagine-no-before-a-flag", "imagine", "a fox --no --ar 16:9", "--no needs a value"),
    text("imagine-dangling-version", "imagine", "a fox --v", "--v needs a value"),
    text("imagine-dangling-chaos", "imagine", "a fox --chaos", "--chaos needs a value"),
    text(
        "txt2img-seed-beyond-64-bits",
        TXT2IMG,
        "a fox --seed 18446744073709551616",
        "--seed",
        "at most 4294967295",
    ),
    options(
        "txt2img-seed-option-beyond-32-bits",
        TXT2IMG,
        {"prompt": "a fox", "seed": 2**40},
        "seed",
        "at most 4294967295",
    ),
]


def on_discord_cdn(filename: str, data: bytes) -> Attachment:
    """A file attached on Discord: a CDN link the provider refuses, so genbot re-hosts it."""
    url = f"https://cdn.discordapp.com/attachments/1/2/{filename}"
    return Attachment(filename, url, "image/png", len(data), data=data)


def shared_on_slack(filename: str, data: bytes, content_type: str) -> Attachment:
    """A file shared on Slack: opens only with the bot token, so genbot re-hosts it."""
    url = f"https://files.slack.com/files-pri/T1-F1/{filename}"
    return Attachment(filename, url, content_type, len(data), data=data, private=True)


HOSTILE_ATTACHMENT_CASES = [
    options(
        "describe-attachment-decompression-bomb",
        "describe",
        {},
        "bomb.png",
        "decompression bomb",
        "too many pixels",
        attachments={"image": on_discord_cdn("bomb.png", bomb_png())},
        rehosting=True,
    ),
    options(
        "blend-attachment-truncated-png",
        "blend",
        {},
        "t.png",
        "truncated or damaged",
        attachments={
            "image1": on_discord_cdn("fine.png", noise_png(16, 16)),
            "image2": on_discord_cdn("t.png", truncated_png()),
        },
        rehosting=True,
    ),
    text(
        "img2img-attachment-html-in-gif",
        "diffusion.img2img",
        "a fox",
        "cat.gif",
        "not an image",
        attachments={"init_image": shared_on_slack("cat.gif", html_gif(), "image/gif")},
        rehosting=True,
    ),
    text(
        "describe-attachment-damaged-jpeg",
        "describe",
        "",
        "d.jpg",
        "truncated or damaged",
        attachments={"image": shared_on_slack("d.jpg", damaged_jpeg(), "image/jpeg")},
        rehosting=True,
    ),
]

HOSTILE_CORE_CASES: tuple[CoreCase, ...] = (
    *TEXT_HYGIENE_CASES,
    *PROMPT_FLAG_CASES,
    *HOSTILE_ATTACHMENT_CASES,
)

HOSTILE_WEB_CASES: tuple[WebCase, ...] = (
    WebCase(
        "upload-decompression-bomb",
        ("decompression bomb", "too many pixels"),
        (("bomb.png", bomb_png(), "image/png"),),
    ),
    WebCase(
        "upload-truncated-png",
        ("truncated or damaged",),
        (("t.png", truncated_png(), "image/png"),),
    ),
    WebCase(
        "upload-damaged-jpeg", ("truncated or damaged",), (("d.jpg", damaged_jpeg(), "image/jpeg"),)
    ),
    WebCase("upload-html-in-gif", ("not an image",), (("cat.gif", html_gif(), "image/gif"),)),
)
