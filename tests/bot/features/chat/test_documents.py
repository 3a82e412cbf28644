"""Documents in chat: text files and PDFs read into the user's turn within the model's context,
with a note of what was read; refusals before anything is sent."""

from __future__ import annotations

from pathlib import Path

from bot.features.chat.documents import DocumentLimits, allot
from bot.kernel import Attachment
from storage import ModerationRule
from tests.bot.features.chat.pdfs import PAGE, make_pdf, read_of_report, report, scan
from tests.bot.features.chat.support import ALICE, CHANNEL, DM, ChatWorld, chat_world


def pdf(name: str, data: bytes) -> Attachment:
    return Attachment(
        name,
        url=f"https://files.example/{name}",
        content_type="application/pdf",
        size=len(data),
        data=data,
    )


def text_file(name: str, text: str, content_type: str | None = None) -> Attachment:
    data = text.encode()
    return Attachment(
        name,
        url=f"https://files.example/{name}",
        content_type=content_type,
        size=len(data),
        data=data,
    )


def test_documents_share_the_budget_fairly() -> None:
    assert allot([10, 500, 500], 600) == [10, 295, 295]
    assert allot([100, 200], 1000) == [100, 200]


async def test_a_300_page_pdf_is_answered_within_the_context_with_a_note(
    world: ChatWorld,
) -> None:
    await world.actor().say(
        "What did the keeper count?", attachments=(pdf("report.pdf", report(300)),)
    )
    (body,) = world.chat_bodies()
    note, answer = world.posted_in(DM)
    read_of_report(body, "What did the keeper count?", note.text)
    assert note.text.endswith(
        "the rest does not fit llm-3.5-turbo's context. To ask about a later part, send that "
        "part on its own, or pick a model with a larger context."
    )
    assert answer.text


async def test_a_text_file_read_whole_stays_in_the_conversation(world: ChatWorld) -> None:
    alice = world.actor()
    notes = text_file("notes.md", "# Plan\nThe launch code word is heliotrope.\n", "text/markdown")
    await alice.say("Summarize", attachments=(notes,))
    assert world.chat_bodies()[-1]["messages"][-1]["content"] == (
        "Summarize\n\n--- notes.md (2 lines) ---\n# Plan\nThe launch code word is heliotrope.\n"
        "--- end of notes.md ---"
    )
    assert len(world.posted_in(DM)) == 1, "no note when everything was read"
    await alice.say("And the code word?")
    history = [m["content"] for m in world.chat_bodies()[-1]["messages"]]
    assert any("heliotrope" in str(content) for content in history[:-1])


async def test_a_file_alone_in_a_mention_opens_a_thread_named_after_it(world: ChatWorld) -> None:
    await world.actor(ALICE, CHANNEL).say(
        "", mention=True, attachments=(text_file("todo.txt", "buy milk"),)
    )
    assert world.chat_bodies()[-1]["messages"][-1]["content"].startswith("--- todo.txt (1 line)")
    ((_, name),) = world.platform.threads
    assert name.startswith("todo.txt")


async def test_chat_takes_a_file(world: ChatWorld) -> None:
    await world.actor().command(
        "chat", prompt="What is it about?", file=text_file("poem.txt", "Roses are red")
    )
    assert "Roses are red" in world.chat_bodies()[-1]["messages"][-1]["content"]


async def test_a_scanned_pdf_is_refused_with_the_reason(world: ChatWorld) -> None:
    await world.actor().say("Read this", attachments=(pdf("scan.pdf", scan(3)),))
    assert world.chat_bodies() == []
    (refusal,) = world.platform.ephemerals_for("alice")
    assert refusal.startswith("scan.pdf has no text layer (it looks like a scan)")
    assert world.posted_in(DM) == []


async def test_files_genbot_cannot_read_are_refused_before_anything_is_sent(
    world: ChatWorld,
) -> None:
    alice = world.actor()
    archive = Attachment(
        "data.zip", url="https://files.example/data.zip", content_type="application/zip", size=10
    )
    await alice.say("What is in here?", attachments=(archive,))
    huge = Attachment("big.txt", url="https://files.example/big.txt", size=11 * 1024 * 1024)
    await alice.say("And here?", attachments=(huge,))
    broken = pdf("broken.pdf", b"%PDF-1.4\nnot really a pdf")
    await alice.say("And this?", attachments=(broken,))
    assert world.chat_bodies() == []
    zip_refusal, size_refusal, broken_refusal = world.platform.ephemerals_for("alice")
    assert zip_refusal.startswith("genbot cannot read data.zip: it reads text files")
    assert size_refusal == "big.txt is larger than 10 MiB, the most genbot reads."
    assert broken_refusal.startswith("broken.pdf could not be read as a PDF")


async def test_the_page_limit_is_the_configured_one(tmp_path: Path) -> None:
    limits = DocumentLimits(max_pages=2)
    async with chat_world(tmp_path, documents=limits) as world:
        await world.actor().say("Count", attachments=(pdf("report.pdf", report(5)),))
        assert PAGE.findall(world.chat_bodies()[-1]["messages"][-1]["content"]) == ["1", "2"]
        note = world.posted_in(DM)[0].text
        assert note.startswith(
            "📄 Read the first 2 of 5 pages of report.pdf: genbot reads at most 2 pages of a PDF."
        )


async def test_a_document_breaking_a_workspace_rule_is_refused_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    async with chat_world(tmp_path, moderated=True) as world:
        rule = ModerationRule("nsfw", "nude")
        await world.store.moderation.add_rule("fake", "w1", rule, "root")
        story = pdf("story.pdf", make_pdf([["A quiet harbour."], ["Then a NUDE swimmer."]]))
        await world.actor(ALICE, CHANNEL).say("Summarize", mention=True, attachments=(story,))
        (refusal,) = world.platform.ephemerals_for("alice")
        assert refusal.startswith(
            "Refused: the document story.pdf matches genbot's rules on **nsfw**, so nothing "
            "was sent."
        )
        assert "60 min" in refusal, "an offence, as for a message"
        assert await world.store.moderation.banned_until("fake", "alice") is not None
        assert world.chat_bodies() == [], "no provider call"
        assert world.platform.threads == [], "no thread opened"


async def test_only_what_the_model_would_read_of_a_document_is_checked(tmp_path: Path) -> None:
    limits = DocumentLimits(max_pages=2)
    async with chat_world(tmp_path, moderated=True, documents=limits) as world:
        rule = ModerationRule("nsfw", "nude")
        await world.store.moderation.add_rule("fake", "w1", rule, "root")
        pages = make_pdf([["A quiet harbour."], ["Boats."], ["Then a nude swimmer."]])
        await world.actor().say("Summarize", attachments=(pdf("story.pdf", pages),))
        (body,) = world.chat_bodies()
        assert "swimmer" not in body["messages"][-1]["content"]
        assert world.platform.ephemerals_for("alice") == []
        assert await world.store.moderation.banned_until("fake", "alice") is None
        await world.actor().command(
            "chat", prompt="And this?", file=text_file("b.txt", "a nude fox")
        )
        assert world.platform.ephemerals_for("alice")[0].startswith(
            "Refused: the document b.txt matches"
        )
        assert len(world.chat_bodies()) == 1
