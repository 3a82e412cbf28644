"""Which images a text command works on: links, uploads, or the images its user shared lately."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from bot.kernel import (
    Attachment,
    CommandError,
    RecentFiles,
    assign_images,
    command,
    command_images,
    links_in,
    without_links,
)


def _file(name: str, content_type: str | None = "image/png") -> Attachment:
    return Attachment(filename=name, url=f"https://files.example/{name}", content_type=content_type)


def _shared(*files: Attachment) -> RecentFiles:
    """A platform's recent files of the user, newest first."""

    async def recent() -> Sequence[Attachment] | None:
        return files

    return recent


async def _unreadable() -> Sequence[Attachment] | None:
    return None


async def _never() -> Sequence[Attachment] | None:
    raise AssertionError("links were given: no need to look at shared files")


async def test_links_fill_the_image_options_in_order_and_leave_the_text() -> None:
    text = "<https://a.example/1.png|one> https://a.example/2.png --dimension square"
    images, rest = await command_images("blend", text, _never)
    assert {name: image.url for name, image in images.items()} == {
        "image1": "https://a.example/1.png",
        "image2": "https://a.example/2.png",
    }
    assert images["image1"].filename == "1.png" and rest == "--dimension square"


async def test_describe_keeps_its_link_in_the_text() -> None:
    assert await command_images("describe", "https://a.example/cat.png", _never) == (
        {},
        "https://a.example/cat.png",
    )


async def test_commands_without_image_options_take_none() -> None:
    assert await command_images("imagine", "a fox https://a.example/x.png", _never) == (
        {},
        "a fox https://a.example/x.png",
    )


async def test_chat_takes_documents_only_never_links_nor_shared_images() -> None:
    text = "what is at https://a.example/x.png"
    assert await command_images("chat", text, _never) == ({}, text)


async def test_shared_files_that_are_images_fill_the_options_oldest_first() -> None:
    newest_first = _shared(
        _file("3.png"), _file("notes.txt", "text/plain"), _file("2.jpg", None), _file("1.png")
    )
    images, rest = await command_images("blend", "--dimension square", newest_first)
    assert [image.filename for image in images.values()] == ["1.png", "2.jpg", "3.png"]
    assert rest == "--dimension square"
    only_newest, _ = await command_images("describe", "", newest_first)
    assert [image.filename for image in only_newest.values()] == ["3.png"]


async def test_missing_images_say_what_to_do() -> None:
    with pytest.raises(CommandError, match=r"`/blend` needs 2 images: share 2 images"):
        await command_images("blend", "", _shared(_file("1.png")))
    with pytest.raises(CommandError, match=r"`/invite @genbot`"):
        await command_images("describe", "", _unreadable)


def test_uploads_fill_options_in_order_and_too_many_are_refused() -> None:
    blend = command("blend")
    assert assign_images(blend, ["a", "b"]) == {"image1": "a", "image2": "b"}
    with pytest.raises(CommandError, match=r"/describe takes one image; you attached 2\."):
        assign_images(command("describe"), ["a", "b"])
    with pytest.raises(CommandError, match=r"/usage does not take images"):
        assign_images(command("usage"), ["a"])
    imagine = command("imagine")
    assert assign_images(imagine, ["a", "b"]) == {"upload1": "a", "upload2": "b"}
    with pytest.raises(CommandError, match=r"/imagine takes at most 5 images; you attached 6\."):
        assign_images(imagine, list("abcdef"))


async def test_imagine_keeps_its_links_and_takes_only_the_shared_images_it_names() -> None:
    text = "https://a.example/x.png a fox --sref #2"
    older, newer, newest = _file("older.png"), _file("newer.png"), _file("newest.png")
    notes = _file("notes.txt", "text/plain")
    assert await command_images("imagine", "a fox https://a.example/x.png", _never) == (
        {},
        "a fox https://a.example/x.png",
    )
    found = await command_images("imagine", text, _shared(newest, notes, newer, older))
    assert found == ({"upload1": newer, "upload2": newest}, text)
    with pytest.raises(CommandError, match=r"`/invite @genbot`"):
        await command_images("imagine", "a fox #1", _unreadable)


def test_links_are_found_bare_or_wrapped() -> None:
    text = "see <https://a.example/x.png|x> and http://b.example/y.png"
    assert links_in(text) == ["https://a.example/x.png", "http://b.example/y.png"]
    assert without_links("a <https://a.example/x.png>  b") == "a b"


def test_a_bare_link_ends_before_the_sentence_does() -> None:
    text = "use https://a.example/x.png. Or (https://b.example/y.png), https://c.example/z?q=1!"
    assert links_in(text) == [
        "https://a.example/x.png",
        "https://b.example/y.png",
        "https://c.example/z?q=1",
    ]
