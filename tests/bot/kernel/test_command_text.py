from __future__ import annotations

import random
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.kernel import (
    COMMANDS,
    CommandError,
    CommandSpec,
    OptionValue,
    command,
    help_text,
    parse_aspect_ratio,
    parse_command_text,
    resolve_command,
    validate_options,
)

IMAGINE = command("imagine")
CHAT = command("chat")
TXT2IMG = command("diffusion.txt2img")


def parse_and_validate(
    spec: CommandSpec, text: str, *, attachments: Iterable[str] = ()
) -> dict[str, OptionValue]:
    """:func:`parse_command_text` then :func:`validate_options` with flag-style messages."""
    raw = parse_command_text(spec, text)
    return validate_options(spec, raw, attachments=attachments, text_style=True)


def error_of(call, *args, **kwargs) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(CommandError) as caught:
        call(*args, **kwargs)
    return str(caught.value)


def test_midjourney_style_flags_bare_flags_and_the_prompt() -> None:
    parsed = parse_command_text(IMAGINE, "a fox in the snow --ar 16:9 --fast")
    assert parsed == {"prompt": "a fox in the snow", "aspect_ratio": "16:9", "process_mode": "fast"}


def test_unknown_flags_stay_in_the_prompt_when_the_command_keeps_them() -> None:
    parsed = parse_command_text(IMAGINE, "a fox --v 6 --ar 2:3 --stylize 250")
    assert parsed == {"prompt": "a fox --v 6 --stylize 250", "aspect_ratio": "2:3"}


def test_an_unknown_flag_is_an_error_naming_it_and_the_valid_ones() -> None:
    message = error_of(parse_command_text, CHAT, "hello --verbose")
    assert "--verbose" in message
    assert "--model" in message and "--temperature / --temp" in message


def test_quoted_values_em_dashes_and_equals_signs() -> None:
    parsed = parse_command_text(TXT2IMG, 'a fox —w 512 --neg "blurry, dark" --seed=7 --cfg “7.5”')
    assert parsed == {
        "prompt": "a fox",
        "width": "512",
        "negative_prompt": "blurry, dark",
        "seed": "7",
        "guidance_scale": "7.5",
    }


def test_prose_options_take_the_words_up_to_the_next_flag() -> None:
    parsed = parse_command_text(TXT2IMG, "a fox --no cars, trees --steps 31")
    assert parsed == {"prompt": "a fox", "negative_prompt": "cars, trees", "steps": "31"}
    parsed = parse_command_text(CHAT, "hi there --system You are a pirate. Be brief --temp 1")
    assert parsed["system"] == "You are a pirate. Be brief"
    assert parsed["prompt"] == "hi there"


def test_quoted_or_em_dash_words_that_are_not_flags_are_plain_text() -> None:
    assert parse_command_text(CHAT, 'what does "--verbose" do') == {
        "prompt": 'what does "--verbose" do'
    }
    assert parse_command_text(CHAT, "wait —really now") == {"prompt": "wait —really now"}
    assert parse_command_text(CHAT, "hi —temp 0.5") == {"prompt": "hi", "temperature": "0.5"}


def test_apostrophes_in_the_prompt_are_not_quotes() -> None:
    parsed = parse_command_text(IMAGINE, "the fox's den --ar 1:1 and 'more'")
    assert parsed["prompt"] == "the fox's den and 'more'"


def test_multi_line_free_text_keeps_its_lines() -> None:
    assert parse_command_text(CHAT, "line one\nline two --temp 0")["prompt"] == "line one\nline two"


def test_a_boolean_flag_is_bare_or_takes_an_explicit_value() -> None:
    assert parse_command_text(IMAGINE, "fox --skip-check")["skip_prompt_check"] == "true"
    parsed = parse_command_text(IMAGINE, "fox --skip-check false")
    assert parsed == {"prompt": "fox", "skip_prompt_check": "false"}
    assert parse_command_text(IMAGINE, "--skip-check a fox")["prompt"] == "a fox"
    settings = command("settings")
    assert parse_command_text(settings, "--remix") == {"remix": "true"}, "alone: turned on"
    assert parse_command_text(settings, "--remix off --stream") == {
        "remix": "off",
        "stream": "true",
    }


def test_flag_problems_are_named() -> None:
    assert error_of(parse_command_text, TXT2IMG, "a fox --width") == (
        "--width needs a value: width in pixels (at most 1024)."
    )
    assert error_of(parse_command_text, TXT2IMG, "a fox --seed --width 5").startswith(
        "--seed needs a value"
    )
    assert error_of(parse_command_text, IMAGINE, "a --fast --mode relax") == (
        "--fast and --mode conflict: both set the process mode; give only one."
    )
    assert error_of(parse_command_text, IMAGINE, "a --fast --turbo") == (
        "--fast and --turbo conflict: both set the process mode; give only one."
    )
    assert error_of(parse_command_text, IMAGINE, "a --ar 1:1 --ar 2:1") == "--ar was given twice."
    message = error_of(parse_command_text, command("blend"), "stray words --dim square")
    assert "takes no free text" in message and "--dimension / --dim" in message
    assert "given twice" in error_of(
        parse_command_text, command("describe"), "https://a.io/x.png --url https://a.io/y.png"
    )


def test_validation_converts_types_and_canonicalises_choices() -> None:
    values = parse_and_validate(TXT2IMG, "a fox --w 512.0 --cfg 7 --steps 31 --seed 0")
    assert values == {
        "prompt": "a fox",
        "width": 512,
        "guidance_scale": 7.0,
        "steps": "31",
        "seed": 0,
    }
    assert type(values["width"]) is int and type(values["guidance_scale"]) is float
    assert parse_and_validate(IMAGINE, "fox --mode TURBO")["process_mode"] == "turbo"
    assert parse_and_validate(CHAT, "hi --model LLM-4")["model"] == "llm-4"
    assert parse_and_validate(IMAGINE, "fox --skip-check yes")["skip_prompt_check"] is True


def test_bounds_and_choices_errors_name_the_option_and_what_is_allowed() -> None:
    assert error_of(validate_options, TXT2IMG, {"prompt": "x", "width": 2048}) == (
        "width must be at most 1024 (got 2048)."
    )
    assert error_of(parse_and_validate, TXT2IMG, "x --width 2048") == (
        "--width must be at most 1024 (got 2048)."
    )
    assert error_of(parse_and_validate, CHAT, "x --temp -1") == (
        "--temperature must be at least 0 (got -1)."
    )
    assert error_of(parse_and_validate, TXT2IMG, "x --steps 30") == (
        "--steps must be one of 21, 31, 41, 51 (got '30')."
    )
    assert error_of(parse_and_validate, TXT2IMG, "x --seed 1.5") == (
        "--seed must be a whole number (got '1.5')."
    )
    assert error_of(parse_and_validate, TXT2IMG, "x --cfg lots") == (
        "--guidance must be a number (got 'lots')."
    )
    assert "true or false" in error_of(
        validate_options, IMAGINE, {"prompt": "x", "skip_prompt_check": "maybe"}
    )
    assert "finite" in error_of(validate_options, TXT2IMG, {"prompt": "x", "guidance_scale": "nan"})
    assert "number" in error_of(validate_options, TXT2IMG, {"prompt": "x", "width": True})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("16x9", "--ar must look like 16:9 (two whole numbers; got '16x9')."),
        ("16:9.5", "--ar must look like 16:9 (two whole numbers; got '16:9.5')."),
        ("0:1", "--ar must use numbers above zero, like 16:9 (got '0:1')."),
        ("10000:10000", "--ar numbers must be at most 9999 (got '10000:10000')."),
    ],
)
def test_aspect_ratios_must_be_two_whole_numbers_in_range(value: str, expected: str) -> None:
    assert error_of(parse_and_validate, IMAGINE, f"fox --ar {value}") == expected


def test_aspect_ratios_are_normalised() -> None:
    assert parse_aspect_ratio(" 16 : 9 ") == "16:9"
    assert parse_aspect_ratio("4:1") == "4:1"
    assert parse_aspect_ratio("5:1") == "5:1", "which ratios are allowed is the provider's to say"
    assert (
        validate_options(IMAGINE, {"prompt": "f", "aspect_ratio": "2:3"})["aspect_ratio"] == "2:3"
    )


def test_required_options_and_attachments() -> None:
    needs = "/imagine needs the prompt. For example: /imagine a fox in the snow --ar 16:9 --fast"
    assert error_of(parse_and_validate, IMAGINE, "--ar 1:1") == needs
    assert error_of(validate_options, IMAGINE, {"aspect_ratio": "1:1"}) == needs, "one wording"
    assert error_of(validate_options, IMAGINE, {}) == needs, "nothing typed"
    assert error_of(validate_options, TXT2IMG, {}).startswith(
        "/diffusion txt2img needs the prompt. For example:"
    )
    blend = command("blend")
    assert "needs image2 (attach a file)" in error_of(
        validate_options, blend, {}, attachments=["image1"]
    )
    assert validate_options(blend, {"dimension": "Portrait"}, attachments=["image1", "image2"]) == {
        "dimension": "portrait"
    }
    assert "must be an attached file" in error_of(validate_options, blend, {"image1": "x"})
    assert "has no option 'colour'" in error_of(validate_options, blend, {"colour": "red"})


def test_a_sentence_about_the_free_text_begins_with_a_capital_letter() -> None:
    assert error_of(parse_and_validate, IMAGINE, "\u200b\u200c") == (
        "The prompt has only invisible characters (zero-width spaces and the like); write it "
        "in visible text."
    )
    twice = "https://x.test/a.png --url https://x.test/b.png"
    assert error_of(parse_command_text, command("describe"), twice) == "The url was given twice."
    assert error_of(validate_options, IMAGINE, {"prompt": "\u200b"}).startswith(
        "prompt has only invisible characters"
    ), "an option's name keeps its spelling"


def test_a_prompt_of_invisible_text_and_parameters_is_refused_as_invisible_text_is() -> None:
    invisible = (
        "The prompt has only invisible characters (zero-width spaces and the like); write it "
        "in visible text."
    )
    for text in ("\u200b --v 6", "\u2060\ufeff —v 6 --no cats", "\u200b --ar 2:3 --stylize 9"):
        assert error_of(parse_and_validate, IMAGINE, text) == invisible, repr(text)
    assert error_of(validate_options, IMAGINE, {"prompt": "\u200b --v 6"}).startswith(
        "prompt has only invisible characters"
    )
    for fine in ("a fox --v 6", "https://x.test/a.png --iw 2", '"--v" 6', "--v 6 --no cats"):
        assert parse_and_validate(IMAGINE, fine)["prompt"] == fine
    assert parse_and_validate(command("prefer.suffix"), "\u200b --v 6")["value"] == (
        "\u200b --v 6"
    ), "a suffix is no prompt: its parameters may stand alone"


def test_a_link_is_refused_naming_the_option_as_the_user_gave_it() -> None:
    describe = command("describe")
    assert error_of(parse_and_validate, describe, "not-a-url") == (
        "The url must be an http or https link (got 'not-a-url')."
    )
    assert error_of(parse_and_validate, describe, "--url ftp://x.test/a.png") == (
        "The url must be an http or https link (got 'ftp://x.test/a.png')."
    )
    assert error_of(validate_options, describe, {"url": "not-a-url"}) == (
        "url must be an http or https link (got 'not-a-url')."
    )
    assert validate_options(describe, {"url": " https://x.test/a.png "}) == {
        "url": "https://x.test/a.png"
    }


def test_empty_strings_count_as_absent() -> None:
    assert validate_options(IMAGINE, {"prompt": "fox", "aspect_ratio": "  "}) == {"prompt": "fox"}


def test_resolve_command_handles_groups_and_unknown_names() -> None:
    spec, rest = resolve_command("/diffusion txt2img a fox --w 512")
    assert spec.name == "diffusion.txt2img" and rest == "a fox --w 512"
    spec, rest = resolve_command("imagine   a fox\nin snow")
    assert spec.name == "imagine" and rest == "a fox\nin snow"
    assert resolve_command("help")[0].name == "help"
    assert "txt2img, img2img, upscale, controlnet" in error_of(resolve_command, "diffusion")
    assert "Unknown subcommand '/diffusion paint'" in error_of(resolve_command, "/diffusion paint")
    assert "Unknown command '/dance'" in error_of(resolve_command, "dance now")
    assert "Empty command" in error_of(resolve_command, "  ")
    assert "Empty command" in error_of(resolve_command, "/ imagine")


def test_help_lists_every_command_option_flag_and_example() -> None:
    text = help_text()
    for spec in COMMANDS:
        assert f"**/{spec.name.replace('.', ' ')}**" in text
        for option in spec.options:
            assert f"`{option.name}`" in text
            for flag in option.flags:
                assert f"`{flag}`" in text
        for example in spec.examples:
            assert example in text
    one = help_text("imagine")
    assert "/imagine" in one and "/chat" not in one
    assert "`style1` (Discord: attach an image)" in one and "named `#1`…`#5`" in one
    assert "`init_image` (attach a file)" in help_text("diffusion img2img")


BOOLEAN_WORDS = {"true", "false", "yes", "no", "on", "off"}
flag_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz,.'", min_size=1, max_size=10).filter(
    lambda word: word not in BOOLEAN_WORDS
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(flag_words, min_size=1, max_size=8),
    st.sampled_from(["1:1", "16:9", "2:3"]) | st.none(),
    st.sampled_from(["--relax", "--fast", "--mode turbo", "--mode mixed"]) | st.none(),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_flags_anywhere_parse_back_to_their_values(
    words: list[str], aspect: str | None, mode: str | None, skip: bool, rng: random.Random
) -> None:
    parts = [" ".join(words)]
    if aspect:
        parts.append(f"--ar {aspect}")
    if mode:
        parts.append(mode)
    if skip:
        parts.append("--skip-check")
    rng.shuffle(parts)
    values = parse_and_validate(IMAGINE, " ".join(parts))
    assert values["prompt"] == " ".join(words)
    assert values.get("aspect_ratio") == aspect
    assert values.get("process_mode") == (mode.split()[-1].lstrip("-") if mode else None)
    assert values.get("skip_prompt_check") == (True if skip else None)
