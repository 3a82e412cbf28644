"""Custom ids carry a button's action and job reference within Discord's 100 characters."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.kernel import Button, button_rows, decode_custom_id, encode_custom_id

actions = st.text(
    st.characters(exclude_characters=":", min_codepoint=33, max_codepoint=126),
    min_size=1,
    max_size=20,
)
refs = st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=16)


@given(actions, refs)
def test_custom_id_round_trip(action: str, ref: str) -> None:
    custom_id = encode_custom_id(action, ref)
    assert len(custom_id) <= 100
    assert decode_custom_id(custom_id) == (action, ref)


def test_button_custom_id() -> None:
    assert Button("U2", "upscale2", "j1").custom_id == "gb:upscale2:j1"


@pytest.mark.parametrize("custom_id", ["", "gb", "gb:", "gb::x", "xx:upscale1:j", "upscale1:j"])
def test_foreign_custom_ids_are_not_ours(custom_id: str) -> None:
    assert decode_custom_id(custom_id) is None


def test_overlong_custom_id_is_refused() -> None:
    with pytest.raises(ValueError, match="100"):
        encode_custom_id("upscale1", "x" * 100)


def test_action_may_not_contain_separator() -> None:
    with pytest.raises(ValueError, match="':'"):
        encode_custom_id("a:b", "ref")


def test_button_rows_make_the_buttons_their_drafts_describe() -> None:
    rows = button_rows(
        "j1",
        [
            [("U1", "upscale1", "primary", False), ("🔄", "reroll", "secondary", True)],
            [("V1", "variation1", "secondary", False)],
        ],
    )
    assert rows == (
        (Button("U1", "upscale1", "j1", "primary"), Button("🔄", "reroll", "j1", disabled=True)),
        (Button("V1", "variation1", "j1"),),
    )
    ids = [button.custom_id for row in rows for button in row]
    assert ids == ["gb:upscale1:j1", "gb:reroll:j1", "gb:variation1:j1"]
