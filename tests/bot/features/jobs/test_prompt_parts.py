"""A prompt cut into what a translation may change and what it keeps as written."""

from __future__ import annotations

import pytest

from bot.features.jobs.prompt_parts import PlaceholdersLost, split_prompt


def test_parameters_from_the_first_flag_on_are_the_tail_and_never_sent() -> None:
    parts = split_prompt("夕暮れの灯台 --ar 16:9 --no 車, 木")
    assert (parts.head, parts.text, parts.kept) == ("", "夕暮れの灯台", ())
    assert parts.tail == "--ar 16:9 --no 車, 木"
    assert parts.joined("a lighthouse at dusk") == "a lighthouse at dusk --ar 16:9 --no 車, 木"


def test_an_em_dash_flag_starts_the_tail_but_a_dash_inside_a_word_does_not() -> None:
    assert split_prompt("猫—ar 2:3").tail == ""
    assert split_prompt("猫 —ar 2:3").tail == "—ar 2:3"
    assert split_prompt("猫-犬 --v 6").text == "猫-犬"


def test_leading_links_are_the_head_and_inner_pieces_become_placeholders() -> None:
    prompt = (
        "https://x.test/a.png <https://x.test/b.png> 夕暮れの灯台 <@U1> と {赤い, 青い}狐 ::2 猫 #2"
    )
    parts = split_prompt(prompt)
    assert parts.head.split() == ["https://x.test/a.png", "<https://x.test/b.png>"]
    assert parts.text == "夕暮れの灯台 [1] と [2]狐 [3] 猫 [4]"
    assert parts.kept == ("<@U1>", "{赤い, 青い}", "::2", "#2")
    assert parts.words == "夕暮れの灯台 と 狐 猫"
    joined = parts.joined("a lighthouse at dusk [1] and [2] fox [3] a cat [4]")
    assert joined == (
        "https://x.test/a.png <https://x.test/b.png> a lighthouse at dusk <@U1> and "
        "{赤い, 青い} fox ::2 a cat #2"
    )


def test_placeholders_may_move_but_each_must_come_back_exactly_once() -> None:
    parts = split_prompt("{赤い, 青い}の猫 と <#C1> の犬")
    assert parts.head == "{赤い, 青い}" and parts.kept == ("<#C1>",)
    assert parts.joined("a cat and a dog of [1]") == "{赤い, 青い} a cat and a dog of <#C1>"
    for answer in ("a cat and a dog", "a cat [1] and a dog [1]", "a cat [1] and [2]"):
        with pytest.raises(PlaceholdersLost):
            parts.joined(answer)


def test_nested_and_escaped_braces_are_one_piece_and_a_brace_never_closed_is_text() -> None:
    parts = split_prompt("猫 {a, {b, c\\}}} と \\{犬 {未完")
    assert parts.kept == ("{a, {b, c\\}}}",)
    assert parts.text == "猫 [1] と \\{犬 {未完"


def test_a_placeholder_the_user_wrote_is_kept_so_it_cannot_collide() -> None:
    parts = split_prompt("猫 [1] と 犬")
    assert parts.text == "猫 [1] と 犬" and parts.kept == ("[1]",)
    assert parts.joined("a cat [1] and a dog") == "a cat [1] and a dog"


def test_a_prompt_of_kept_pieces_only_has_no_words() -> None:
    parts = split_prompt("https://x.test/a.png --sref #2 --ar 16:9")
    assert parts.words == "" and parts.text == ""
    assert parts.joined("") == "https://x.test/a.png --sref #2 --ar 16:9"
