"""The playground on the real core and the provider simulator, over HTTP and server-sent events:
imagine → grid → upscale → Custom Zoom, a streamed chat answer, and a refused command."""

from __future__ import annotations

from pathlib import Path

import pytest
from yarl import URL

from adapters.web.language import LANGUAGE_COOKIE
from bot.kernel import CommandError, LimitsSettings, command, parse_aspect_ratio, speaking
from simulator.state import Dialect
from tests.genbot.stack import (
    ChannelView,
    Message,
    PlaygroundUser,
    Stack,
    button,
    labels,
    playground_user,
    real_stack,
)
from tests.language import german, said

GRID_LABELS = [["U1", "U2", "U3", "U4", "🔄"], ["V1", "V2", "V3", "V4", "🌱 Seed"], ["ℹ️"]]
UPSCALE_FOLLOW_UPS = {
    "Vary (Strong)",
    "Vary (Subtle)",
    "Vary (Region)",
    "Zoom Out 2x",
    "Zoom Out 1.5x",
    "Custom Zoom",
    "⬅️",
    "➡️",
    "⬆️",
    "⬇️",
}


async def imagine_grid(user: PlaygroundUser, view: ChannelView, text: str) -> Message:
    """Run ``text`` (an /imagine command) and return the grid message once it is posted."""
    echo_id = await user.command(text)
    return await view.until(lambda: view.with_buttons(echo_id, "U1"))


async def upscale_first(user: PlaygroundUser, view: ChannelView, grid: Message) -> Message:
    """Press U1 under ``grid`` and return the upscale once it is posted with its follow-ups."""
    event_id = await user.press(grid, "U1")
    await view.until(lambda: view.handled(event_id))
    return await view.until(lambda: view.with_buttons(grid["id"], "Vary (Strong)"))


async def served(stack: Stack, user: PlaygroundUser, message: Message) -> bytes:
    """The bytes of the message's only image, as the browser fetches them."""
    [image] = message["images"]
    async with user.session.get(image["url"]) as response:
        assert response.status == 200
        assert response.content_type == "image/png"
        return await response.read()


@pytest.mark.parametrize("dialect", ["default", "spec", "variant"])
async def test_imagine_streams_progress_then_the_grid_and_u1_upscales(
    tmp_path: Path, dialect: Dialect
) -> None:
    async with real_stack(tmp_path, dialect=dialect) as stack, playground_user(stack.url) as user:
        view = await user.watch()
        echo_id = await user.command("/imagine a lighthouse")
        grid = await view.until(lambda: view.with_buttons(echo_id, "U1"))

        echo, progress = view.messages[echo_id], view.after(echo_id)[0]
        assert (echo["kind"], echo["text"], echo["command"]) == (
            "user",
            "/imagine a lighthouse",
            "imagine",
        )
        assert progress["kind"] == "bot" and progress["reply_to"] == echo_id
        progress_events = view.events_of(progress["id"])
        assert progress_events[0]["type"] == "post"
        assert "a lighthouse" in progress_events[0]["message"]["text"]
        assert [e["type"] for e in progress_events[1:]] and all(
            e["type"] == "edit" for e in progress_events[1:]
        )
        assert grid["id"] == progress["id"] and "a lighthouse" in grid["text"]
        assert view.after(echo_id) == [grid], "one message per job"
        assert labels(grid) == GRID_LABELS
        assert button(grid, "U1").startswith("gb:upscale1:")
        assert len(await served(stack, user, grid)) > 1000
        [imagine] = [r for r in stack.sim.state.requests_to("/gen/v2/imagine") if r.created_id]
        assert imagine.body["prompt"].startswith("a lighthouse")

        upscale = await upscale_first(user, view, grid)
        follow_ups = {label for row in labels(upscale) for label in row}
        assert follow_ups >= UPSCALE_FOLLOW_UPS
        assert upscale["reply_to"] == grid["id"] and view.after(grid["id"]) == [upscale]
        assert "Upscale #1" in view.events_of(upscale["id"])[0]["message"]["text"]
        assert upscale["text"].startswith("**Upscaled #1** — a lighthouse")
        marked = view.messages[grid["id"]]
        assert [
            b["label"] for row in marked["buttons"] for b in row if b["style"] == "primary"
        ] == ["U1"]
        assert len(await served(stack, user, upscale)) > 1000
        [request] = stack.sim.state.requests_to("/gen/v2/upscale")
        assert request.status == 200 and request.body["origin_task_id"] == imagine.created_id
        assert request.body["index"] == "1"


async def test_custom_zoom_opens_a_form_whose_submission_starts_an_outpaint(
    tmp_path: Path,
) -> None:
    async with real_stack(tmp_path) as stack, playground_user(stack.url) as user:
        view = await user.watch()
        grid = await imagine_grid(user, view, "/imagine a lighthouse")
        upscale = await upscale_first(user, view, grid)

        await user.press(upscale, "Custom Zoom")
        opened = await view.until(
            lambda: next((e for e in view.events if e["type"] == "modal"), None)
        )
        form = opened["modal"]
        assert form["title"] == "Custom Zoom" and form["action"] == "outpaint_custom"
        assert [field["id"] for field in form["fields"]] == ["zoom", "zoom_value", "prompt"]
        assert [c["value"] for c in form["fields"][0]["choices"]] == ["1.25", "1.5", "1.75", "2"]
        assert stack.sim.state.requests_to("/gen/v2/outpaint") == []

        refused = await user.refused(
            "/api/modal",
            {"custom_id": form["custom_id"], "values": {"zoom": "", "zoom_value": "3"}},
        )
        error = "The zoom must be above 1 and at most 2 (got 3)."
        assert refused == {"error": error, "errors": {"zoom_value": error}}

        submitted = await user.post(
            "/api/modal",
            {"custom_id": form["custom_id"], "values": {"zoom": "1.5", "zoom_value": ""}},
        )
        await view.until(lambda: view.handled(submitted))
        zoomed = await view.until(lambda: view.with_buttons(upscale["id"], "U1"))
        assert labels(zoomed) == GRID_LABELS
        [upscale_request] = stack.sim.state.requests_to("/gen/v2/upscale")
        [outpaint] = stack.sim.state.requests_to("/gen/v2/outpaint")
        assert outpaint.body["origin_task_id"] == upscale_request.created_id
        assert outpaint.body["zoom_ratio"] == "1.5"


@pytest.mark.parametrize("dialect", ["default", "spec"])
async def test_a_plain_message_streams_the_models_answer_into_one_message(
    tmp_path: Path, dialect: Dialect
) -> None:
    answer = " ".join(f"word{number}" for number in range(80)) + "."
    async with (
        real_stack(tmp_path, time_scale=1.0, dialect=dialect) as stack,
        playground_user(stack.url) as user,
    ):
        dm = await user.dm_channel()
        view = await user.watch(dm)
        echo_id = await user.message(f"echo: {answer}", channel=dm)
        await view.until(lambda: view.handled(echo_id), timeout=20)

        [reply] = view.after(echo_id)
        assert reply["kind"] == "bot" and reply["from_model"] and reply["reply_to"] == echo_id
        assert reply["text"] == answer
        events = view.events_of(reply["id"])
        assert events[0]["type"] == "post" and len(events) >= 3
        shown = [event["message"]["text"] for event in events[:-1]]
        assert all(text.endswith(" ▌") and answer.startswith(text[:-2]) for text in shown)
        assert len({len(text) for text in shown}) == len(shown)
        [request] = stack.sim.state.requests_to("/v1/chat/completions")
        assert request.body["stream"] is True


@pytest.mark.parametrize("dialect", ["default", "spec", "variant"])
async def test_draw_in_a_dm_runs_the_tool_and_its_grid_comes_by_webhook(
    tmp_path: Path, dialect: Dialect
) -> None:
    # The backstop poll comes after 30 s: a grid within the wait came by webhook. The variant
    # streams single-line events and tool_calls, refuses the function role and webhook paths.
    slow_backstop = LimitsSettings(poll_interval_min=0.01, poll_interval_max=30.0)
    async with (
        real_stack(tmp_path, dialect=dialect, limits=slow_backstop) as stack,
        playground_user(stack.url) as user,
    ):
        dm = await user.dm_channel()
        view = await user.watch(dm)
        asked = await user.message("draw a lighthouse at dusk", channel=dm)
        grid = await view.until(lambda: view.with_buttons(asked, "U1"), timeout=20)
        await view.until(lambda: view.handled(asked), timeout=20)

        assert labels(grid) == GRID_LABELS and grid["images"]
        answers = [m for m in view.after(asked) if m["from_model"]]
        assert len(answers) == 1 and answers[0]["text"]
        [imagine] = [r for r in stack.sim.state.requests_to("/gen/v2/imagine") if r.created_id]
        assert imagine.body["prompt"] == "a lighthouse at dusk"
        assert [a.status for a in stack.sim.state.webhook_attempts] == [200]
        chats = [r.status for r in stack.sim.state.requests_to("/v1/chat/completions")]
        assert chats == ([200, 400, 200] if dialect == "variant" else [200, 200])


async def test_a_mention_in_a_channel_answers_in_a_thread_and_dms_are_private(
    tmp_path: Path,
) -> None:
    async with (
        real_stack(tmp_path) as stack,
        playground_user(stack.url) as user,
        playground_user(stack.url) as neighbour,
    ):
        view = await user.watch()
        quiet = await user.message("echo: nobody asked me")
        asked = await user.message("@genbot echo: a thread for this")
        await view.until(lambda: view.handled(asked))
        root = view.messages[asked]
        assert root["thread_info"] is not None and root["text"] == "@genbot echo: a thread for this"
        [reply] = [m for m in view.messages.values() if m["thread"] == asked]
        assert reply["text"] == "a thread for this" and reply["from_model"]
        assert view.after(quiet)[0]["id"] == asked, "a message that mentions nobody gets no answer"
        assert len(stack.sim.state.requests_to("/v1/chat/completions")) == 1

        started = await user.command("/chat echo: another thread")
        await view.until(lambda: view.handled(started))
        threads = [m for m in [view.messages[started], *view.after(started)] if m["thread_info"]]
        assert len(threads) == 1

        dm = await user.dm_channel()
        assert dm != await neighbour.dm_channel()
        async with neighbour.session.get("/api/history", params={"channel": dm}) as refused:
            assert refused.status == 400
            assert "someone else's direct messages" in (await refused.json())["error"]


async def test_an_invalid_option_is_refused_privately_with_no_provider_call(
    tmp_path: Path,
) -> None:
    async with (
        real_stack(tmp_path) as stack,
        playground_user(stack.url) as user,
        playground_user(stack.url) as neighbour,
    ):
        view, neighbours_view = await user.watch(), await neighbour.watch()
        echo_id = await user.command("/diffusion txt2img a fox --width 2048")
        await view.until(lambda: view.handled(echo_id))

        [refusal] = view.after(echo_id)
        assert refusal["kind"] == "ephemeral" and refusal["reply_to"] == echo_id
        assert "width" in refusal["text"] and "1024" in refusal["text"]
        assert "2048" in refusal["text"]
        assert view.messages[echo_id]["private"], "the refused command stays its user's"
        await neighbours_view.until(lambda: neighbours_view.handled(echo_id))
        assert list(neighbours_view.messages) == [], "the neighbour sees none of it"
        assert stack.sim.state.requests_to("/diff/") == []


async def test_a_request_the_provider_refuses_is_told_privately_and_no_card_stays(
    tmp_path: Path,
) -> None:
    """``--ar 99:1`` reaches the provider (docs/provider.md#prompt-check), which refuses it: its
    user alone reads why, and the job's card, posted before the call, is deleted for everyone."""
    async with (
        real_stack(tmp_path) as stack,
        playground_user(stack.url) as user,
        playground_user(stack.url) as neighbour,
    ):
        view, neighbours_view = await user.watch(), await neighbour.watch()
        echo_id = await user.command("/imagine a cat --ar 99:1")
        await view.until(lambda: view.handled(echo_id))
        await neighbours_view.until(lambda: neighbours_view.handled(echo_id))

        shown = [m for m in view.after(echo_id) if not m["deleted"]]
        assert [(m["kind"], m["text"]) for m in shown] == [
            (
                "ephemeral",
                "The service refused the request: aspect_ratio must be between 1:4 and 4:1 "
                "(got 99:1)",
            )
        ]
        seen = [m for m in neighbours_view.messages.values() if m["kind"] != "user"]
        assert [m["deleted"] for m in seen] == [True], "the card came and went"
        assert len(stack.sim.state.requests_to("/gen/v2/imagine")) == 1


async def test_bad_input_genbot_refuses_itself_is_said_privately_in_the_options_words(
    tmp_path: Path,
) -> None:
    """Invisible text before an /imagine prompt's parameters, a missing prompt, a /describe
    link that is none: refused before the provider, privately, naming what the user gave."""
    async with real_stack(tmp_path) as stack, playground_user(stack.url) as user:
        view = await user.watch()
        refusals = {
            "/imagine \u200b --v 6": "The prompt has only invisible characters (zero-width "
            "spaces and the like); write it in visible text.",
            "/imagine --fast": "/imagine needs the prompt. For example: /imagine a fox in the "
            "snow --ar 16:9 --fast",
            "/imagine": "/imagine needs the prompt. For example: /imagine a fox in the snow "
            "--ar 16:9 --fast",
            "/describe not-a-url": "The url must be an http or https link (got 'not-a-url').",
        }
        for text, refusal in refusals.items():
            echo_id = await user.command(text)
            await view.until(lambda: view.handled(echo_id))  # noqa: B023
            assert [(m["kind"], m["text"]) for m in view.after(echo_id)] == [
                ("ephemeral", refusal)
            ], text
        assert stack.sim.state.requests_to("/gen/v2/") == []


async def test_in_german_help_settings_a_grid_its_buttons_and_a_refusal(tmp_path: Path) -> None:
    """A playground whose switch says German: /help, /settings, the grid and its buttons, the
    upscale's buttons and a refusal speak German."""
    async with real_stack(tmp_path) as stack, playground_user(stack.url) as user:
        user.session.cookie_jar.update_cookies({LANGUAGE_COOKIE: "de"}, URL(stack.url))
        view = await user.watch()

        def answers(echo_id: str) -> str:
            return "\n".join(message["text"] for message in view.after(echo_id))

        echo_id = await user.command("/help")
        await view.until(lambda: view.handled(echo_id))
        assert german(command("imagine").description) in answers(echo_id)

        echo_id = await user.command("/settings --ar 16:9")
        await view.until(lambda: view.handled(echo_id))
        change = said("de", "{setting} → {value}", setting=german("aspect ratio"), value="16:9")
        assert answers(echo_id) == german("Saved your defaults: {changes}.", changes=change)

        grid = await imagine_grid(user, view, "/imagine a lighthouse")
        assert german("Imagined") in grid["text"]
        event_id = await user.press(grid, "U1")
        await view.until(lambda: view.handled(event_id))
        strong = german("Vary (Strong)")
        upscale = await view.until(lambda: view.with_buttons(grid["id"], strong))
        assert german("Upscaled #{number}", number=1) in upscale["text"]

        with speaking("de"), pytest.raises(CommandError) as refused:
            parse_aspect_ratio("99", "--ar")
        echo_id = await user.command("/imagine a fox --ar 99")
        await view.until(lambda: view.handled(echo_id))
        assert str(refused.value) in answers(echo_id)
