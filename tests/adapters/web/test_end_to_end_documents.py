"""The playground on the real core and the simulator: a PDF and a text file uploaded with a DM
message are read into the chat request (the PDF within the model's context, with a note of what
was read), and served back as documents, never as a type a browser would run."""

from __future__ import annotations

from pathlib import Path

from aiohttp import FormData

from tests.bot.features.chat.pdfs import read_of_report, report
from tests.genbot.stack import PlaygroundUser, playground_user, real_stack

CHAT_PATH = "/v1/chat/completions"


async def upload(user: PlaygroundUser, name: str, data: bytes, content_type: str) -> dict[str, str]:
    form = FormData()
    form.add_field("file", data, filename=name, content_type=content_type)
    async with user.session.post("/api/upload", data=form) as response:
        answer = await response.json()
        assert response.status == 201, answer
        [item] = answer["uploads"]
        return dict(item)


async def test_a_300_page_pdf_sent_in_a_dm_is_read_within_the_context(tmp_path: Path) -> None:
    async with real_stack(tmp_path) as stack, playground_user(stack.url) as user:
        dm = await user.dm_channel()
        view = await user.watch(dm)
        pdf = await upload(user, "report.pdf", report(300), "application/pdf")
        page = await upload(user, "page.html", b"<script>alert(1)</script>", "text/html")
        assert (pdf["content_type"], page["content_type"]) == ("application/pdf", "text/plain")
        body = {"text": "What did the keeper count?", "channel": dm}
        asked = await user.post("/api/message", {**body, "attachments": [pdf["id"], page["id"]]})
        await view.until(lambda: view.handled(asked), timeout=20)

        note, answer = view.after(asked)
        [request] = stack.sim.state.requests_to(CHAT_PATH)
        read_of_report(request.body, "What did the keeper count?", note["text"])
        content = request.body["messages"][-1]["content"]
        assert "--- page.html (1 line) ---\n<script>alert(1)</script>" in content
        assert answer["from_model"] and answer["text"]
        shown = {f["filename"]: f for f in view.messages[asked]["images"]}
        async with user.session.get(shown["page.html"]["url"]) as served:
            assert served.content_type == "text/plain"
            assert served.headers["X-Content-Type-Options"] == "nosniff"


async def test_chat_takes_an_uploaded_file(tmp_path: Path) -> None:
    async with real_stack(tmp_path) as stack, playground_user(stack.url) as user:
        view = await user.watch()
        notes = await upload(user, "notes.md", b"The code word is heliotrope.", "text/markdown")
        body = {"text": "/chat What is the code word?", "attachments": [notes["id"]]}
        started = await user.post("/api/command", body)
        await view.until(lambda: view.handled(started), timeout=20)
    [request] = stack.sim.state.requests_to(CHAT_PATH)
    assert request.body["messages"][-1]["content"] == (
        "What is the code word?\n\n--- notes.md (1 line) ---\nThe code word is heliotrope.\n"
        "--- end of notes.md ---"
    )
