"""Text translation both ways: Markdown → mrkdwn / safe markdown, Slack text → plain text."""

from __future__ import annotations

import pytest

from adapters.slack.formatting import (
    fallback_text,
    markdown_to_mrkdwn,
    message_blocks,
    modal_view,
    neutralise_markdown,
    split_text,
)
from adapters.slack.inbound import (
    SlashRoute,
    plain_text,
    press_from_action,
    route_command,
    submit_from_view,
)
from adapters.text import truncate
from bot.features.jobs.forms import form_for, refused_form
from bot.kernel import INFO_ACTION, Button, CommandError, Modal, ModalField, OutMessage, Place
from tests.fakes.slack_blocks import message_block_errors, view_errors


@pytest.mark.parametrize(
    ("markdown", "mrkdwn"),
    [
        ("**bold** and __bold__", "*bold* and *bold*"),
        ("*italic* and _italic_", "_italic_ and _italic_"),
        ("~~gone~~", "~gone~"),
        ("# Title\ntext", "*Title*\ntext"),
        ("- one\n* two", "• one\n• two"),
        ("[docs](https://example.com/a?b=1&c=2)", "<https://example.com/a?b=1&amp;c=2|docs>"),
        ("2 * 3 * 4 < 25 & true", "2 * 3 * 4 &lt; 25 &amp; true"),
        ("`**not bold** <x>`", "`**not bold** &lt;x&gt;`"),
        ("```python\nprint('**x**' < 1)\n```", "```print('**x**' &lt; 1)```"),
        ("<!channel> <@U1>", "&lt;!channel&gt; &lt;@U1&gt;"),
    ],
)
def test_markdown_becomes_escaped_mrkdwn(markdown: str, mrkdwn: str) -> None:
    assert markdown_to_mrkdwn(markdown) == mrkdwn


def test_an_unfinished_code_fence_while_streaming_stays_code() -> None:
    assert markdown_to_mrkdwn("Here:\n```py\nx = 1 **2") == "Here:\n```x = 1 **2```"


@pytest.mark.parametrize(
    "text",
    ["<!everyone>", "<!here>", "<!channel>", "<@U123>", "<!subteam^S1>", "<#C1>", "&lt;!here&gt;"],
)
def test_ping_tokens_are_broken_in_markdown(text: str) -> None:
    broken = neutralise_markdown(f"hey {text} there")
    assert broken != f"hey {text} there"
    assert broken.replace("\u200b", "") == f"hey {text} there"


@pytest.mark.parametrize(
    "text",
    [
        "@Here",
        "@HERE",
        "@Channel",
        "@EveryOne",
        "&#60;!here>",
        "&#x3C;!channel>",
        "&LT;!everyone&GT;",
        "&lt;&#64;U123&gt;",
        "<&#33;here>",
        "&#64;here",
        "&commat;channel",
    ],
)
def test_case_variants_and_entity_forms_of_pings_are_broken(text: str) -> None:
    broken = neutralise_markdown(f"hey {text} there")
    assert broken != f"hey {text} there"
    assert broken.replace("\u200b", "") == f"hey {text} there"


def test_truncate_ends_with_an_ellipsis_within_the_limit() -> None:
    assert [truncate("abcdef", n) for n in (6, 4, 1, 0)] == ["abcdef", "abc…", "…", ""]


def test_plain_broadcast_words_are_broken_but_emails_are_not() -> None:
    assert neutralise_markdown("@here and @channel, mail me@everyone.org") == (
        "@\u200bhere and @\u200bchannel, mail me@everyone.org"
    )


def test_buttons_map_to_actions_blocks_with_slack_styles() -> None:
    message = OutMessage(
        text="",
        buttons=(
            (Button("U1", "upscale1", "j", "success"), Button("Stop", "cancel", "j", "danger")),
            (Button("x" * 100, "reroll", "j"),),
        ),
    )

    blocks = message_blocks(message)

    first, second = blocks
    assert [e.get("style") for e in first["elements"]] == ["primary", "danger"]
    assert second["elements"][0]["text"]["text"] == "x" * 74 + "…"
    assert first["block_id"] != second["block_id"]
    assert fallback_text(message) == "U1 · Stop · " + "x" * 100


def test_info_is_an_overflow_item_ending_the_last_row_and_its_choice_is_a_press() -> None:
    info = Button("ℹ️", INFO_ACTION, "job1")
    message = OutMessage(text="", buttons=((Button("U1", "upscale1", "job1"),), (info,)))

    blocks = message_blocks(message)

    [row] = blocks
    assert message_block_errors(blocks) == []
    button, overflow = row["elements"]
    assert button["text"]["text"] == "U1"
    assert overflow["type"] == "overflow"
    assert overflow["options"] == [
        {
            "text": {"type": "plain_text", "text": "ℹ️ Image info", "emoji": True},
            "value": info.custom_id,
        }
    ]
    chosen = {
        "type": "overflow",
        "action_id": overflow["action_id"],
        "selected_option": overflow["options"][0],
    }
    body = {
        "actions": [chosen],
        "container": {"type": "message", "channel_id": "C1", "message_ts": "1.0"},
        "team": {"id": "T1"},
        "user": {"id": "U1", "username": "ann"},
    }
    press = press_from_action(body, frozenset())
    assert press is not None and (press.action, press.ref) == (INFO_ACTION, "job1")
    alone = message_blocks(OutMessage(text="", buttons=((info,),)))
    assert [e["type"] for block in alone for e in block["elements"]] == ["overflow"]


def test_button_ids_longer_than_slack_allows_are_refused() -> None:
    with pytest.raises(ValueError, match="longer than"):
        Button("B", "reroll", "r" * 120).custom_id  # noqa: B018


def test_split_text_prefers_line_ends() -> None:
    assert split_text("aaaa\nbbbb\ncc", 9) == ["aaaa\nbbbb", "cc"]
    assert split_text("a" * 10, 4) == ["aaaa", "aaaa", "aa"]


def test_modal_fields_become_inputs_within_slack_limits() -> None:
    modal = Modal(
        "A title far longer than twenty-four characters",
        "vary_region",
        "job",
        (
            ModalField(
                "prompt", "Prompt", placeholder="p" * 200, default="d" * 5000, max_length=4000
            ),
        ),
    )

    view = modal_view(modal, Place("slack", "T1", "C1", "1.2"))

    assert len(view["title"]["text"]) == 24
    (block,) = view["blocks"]
    assert (block["block_id"], block["element"]["action_id"]) == ("prompt", "prompt")
    assert block["element"]["max_length"] == 3000
    assert len(block["element"]["initial_value"]) == 3000
    assert len(block["element"]["placeholder"]["text"]) == 150
    assert view["callback_id"] == "gb:vary_region:job"


def test_editor_forms_show_their_notice_and_selects_and_read_the_choice_back() -> None:
    filled = form_for("vary_region", "job", "a fox", values={"area": "left half"})
    assert filled is not None
    form = refused_form(filled, CommandError("Oops."))
    view = modal_view(form, Place("slack", "T1", "C1"))

    assert view_errors(view) == []
    notice, area, region, _ = view["blocks"]
    assert notice["type"] == "section" and notice["text"]["text"].startswith("Oops.\nArea:")
    assert area["element"]["type"] == "static_select"
    assert area["element"]["initial_option"]["value"] == "left half"
    assert region["element"]["type"] == "plain_text_input"
    state = {
        "area": {"area": {"type": "static_select", "selected_option": {"value": "center"}}},
        "region": {"region": {"type": "plain_text_input", "value": None}},
    }
    body = {"view": {**view, "state": {"values": state}}, "team": {"id": "T1"}, "user": {}}
    submit = submit_from_view(body, frozenset())
    assert submit is not None and dict(submit.values) == {"area": "center", "region": ""}


def test_slack_text_becomes_plain_text() -> None:
    text = "<@UBOT> hi <@U2|bob> in <#C1|general> <!here> see <https://x.io/a|x.io> &amp; &lt;3"
    assert plain_text(text, "UBOT") == "hi @bob in #general @here see https://x.io/a & <3"


@pytest.mark.parametrize(
    ("slash", "text", "expected"),
    [
        ("/imagine", " a fox ", SlashRoute("imagine", "a fox")),
        (
            "/diffusion",
            "controlnet a fox --controlnet canny",
            SlashRoute("diffusion.controlnet", "a fox --controlnet canny"),
        ),
        ("/genbot", "Settings", SlashRoute("settings", "")),
        ("/genbot", "", SlashRoute("help", "")),
        ("/genbot", "help diffusion", SlashRoute("help", "diffusion")),
        (
            "/genbot",
            "admin Moderation add nude --category nsfw",
            SlashRoute("admin.moderation", "add nude --category nsfw"),
        ),
    ],
)
def test_routes(slash: str, text: str, expected: SlashRoute) -> None:
    assert route_command(slash, text) == expected


def test_unknown_genbot_subcommand_lists_the_choices() -> None:
    answer = route_command("/genbot", "credits")
    choices = "settings | usage | jobs | show | forget-me | prefer | help | admin"
    assert answer == f"`credits` is not one of `/genbot {choices}`."
