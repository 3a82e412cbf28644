"""Prompt expansion: saved options spliced in word for word, unknown ``--names`` refused,
the suffix, and ``{a, b}`` permutations with their cap."""

from __future__ import annotations

import pytest

from bot.kernel import (
    ButtonPress,
    Command,
    CommandError,
    Expansion,
    ModalSubmit,
    Place,
    User,
    command,
    expands_prompt,
    expansion,
    name_problem,
    name_the_saved,
    permutation_count,
    permutations,
    refuse_permuted_aspect,
    sent_prompts,
    splice,
    take_repeat,
    with_suffix,
    written_literally,
)

IMAGINE = command("imagine")
URL = "https://example.com/neon.png?x=1&y={2}"


def test_a_saved_option_is_spliced_in_word_for_word() -> None:
    saved = {"neon": f"--style raw --sref {URL} --sw 200"}
    spliced = splice("a city --neon --ar 16:9", saved, IMAGINE)
    assert spliced.text == f"a city --style raw --sref {URL} --sw 200 --ar 16:9"
    assert spliced.used == (("neon", saved["neon"]),)
    assert splice("a city --NEON", saved, IMAGINE).text.endswith("--sw 200")


def test_parameters_and_the_commands_flags_are_never_saved_names() -> None:
    kept = "a fox --v 6 --chaos 20 --sref https://x/y.png --fast --repeat 2 --ar 1:1"
    assert splice(kept, {}, IMAGINE).text == kept
    assert name_problem("ar", IMAGINE) is not None
    assert name_problem("sref", IMAGINE) is not None
    assert name_problem("fast", IMAGINE) is not None
    assert name_problem("Neon!", IMAGINE) is not None
    assert name_problem("neon", IMAGINE) is None


def test_an_unknown_name_is_refused_with_the_users_names() -> None:
    with pytest.raises(CommandError, match=r"--nein is not one of your saved options.*--neon"):
        splice("a city --nein", {"neon": "--style raw"}, IMAGINE)
    with pytest.raises(CommandError, match="you have none yet"):
        splice("a city --nein", {}, IMAGINE)
    assert splice('a city "--nein"', {}, IMAGINE).text == 'a city "--nein"'


def test_a_refusal_after_an_expansion_names_the_saved_option() -> None:
    error = name_the_saved(CommandError("--ar must look like 16:9."), [("wide", "--ar 99")])
    assert "--wide (`--ar 99`)" in str(error)


def test_the_suffix_is_appended() -> None:
    assert with_suffix("a fox ", "--v 6", IMAGINE) == "a fox --v 6"
    assert with_suffix("a fox", " ", IMAGINE) == "a fox"
    assert with_suffix("a fox", "in oil --no dogs, trees --ar 2:1", IMAGINE) == (
        "a fox in oil --no dogs, trees --ar 2:1"
    )


def test_what_the_prompt_sets_wins_over_the_suffix() -> None:
    suffix = "--v 5.2 --ar 16:9 --relax --stylize 100"
    assert with_suffix("a cat --v 7", suffix, IMAGINE) == (
        "a cat --v 7 --ar 16:9 --relax --stylize 100"
    )
    assert with_suffix("a tower --ar 1:1", suffix, IMAGINE) == (
        "a tower --ar 1:1 --v 5.2 --relax --stylize 100"
    )
    assert with_suffix("a cat --aspect=1:1 --version 7 --fast --s 50", suffix, IMAGINE) == (
        "a cat --aspect=1:1 --version 7 --fast --s 50"
    )
    assert with_suffix("a cat --niji 6", "--v 6.1 --ar=2:3 lit", IMAGINE) == (
        "a cat --niji 6 --ar=2:3 lit"
    )
    assert with_suffix('a cat "--v"', "--v 6", IMAGINE) == 'a cat "--v" --v 6'


def test_options_given_apart_from_the_prompt_win_over_the_suffix() -> None:
    assert with_suffix("a cat", "--ar 16:9 in oil --v 6", IMAGINE, ["aspect_ratio"]) == (
        "a cat in oil --v 6"
    )
    assert with_suffix("a cat", "--fast --repeat 2", IMAGINE, ["process_mode", "repeat"]) == (
        "a cat"
    )


def test_a_prompt_without_visible_text_gets_no_suffix() -> None:
    assert with_suffix("\u200b", "--v 5.2", IMAGINE) == "\u200b"
    assert with_suffix("\u200b\u2060 --ar 1:1", "--v 5.2", IMAGINE) == "\u200b\u2060 --ar 1:1"
    assert with_suffix("--ar 1:1", "--v 5.2", IMAGINE) == "--ar 1:1"
    assert with_suffix("a cat --ar 1:1 --aspect 2:3", "--v 5.2", IMAGINE) == (
        "a cat --ar 1:1 --aspect 2:3"
    ), "refused as typed"


def test_permutations_multiply_nest_and_repeat() -> None:
    assert permutations("{red, blue} fox", 10) == ["red fox", "blue fox"]
    assert permutations("{red, blue} fox", 10, repeat=2) == [
        "red fox", "red fox", "blue fox", "blue fox",
    ]  # fmt: skip
    assert permutations("a {big, small} {cat, dog}", 10) == [
        "a big cat", "a big dog", "a small cat", "a small dog",
    ]  # fmt: skip
    assert permutations("a {red {fox, owl}, blue}", 10) == ["a red fox", "a red owl", "a blue"]
    assert permutations(r"a {x\, y, z}", 10) == ["a x, y", "a z"]
    assert permutations("a fox", 10, repeat=3) == ["a fox"] * 3
    assert permutation_count("{a, b} {c, d, e} {f, g}") == 12


def test_combinations_that_read_the_same_are_kept_once() -> None:
    assert expansion("{,,,,} cat", 10) == Expansion(("cat",), dropped=4)
    assert expansion("{a,a} {b,b}", 10) == Expansion(("a b",), dropped=3)
    assert expansion("{a, {a, b}} {x, x}", 10) == Expansion(("a x", "b x"), dropped=4)
    assert expansion("{big  cat, big cat , dog}", 10) == Expansion(("big cat", "dog"), dropped=1)
    assert expansion("{a, a} fox", 10, repeat=2) == Expansion(("a fox", "a fox"), dropped=1)
    assert expansion("{a, A} fox", 10) == Expansion(("a fox", "A fox"))
    assert permutations("{,,,,} cat", 10) == ["cat"]


def test_permutations_past_the_cap_are_refused_explaining_it() -> None:
    with pytest.raises(CommandError, match=r"12 jobs \(3 prompts × --repeat 4\).*at most 10"):
        permutations("{a, b, c} fox", 10, repeat=4)
    with pytest.raises(CommandError, match="max_jobs_per_command") as choices:
        permutations("{a, b} {c, d} {e, f} {g, h}", 10)
    assert str(choices.value).endswith("follow. Use fewer {…} choices."), "no --repeat to lower"
    with pytest.raises(CommandError) as repeats:
        permutations("a fox", 2, repeat=3)
    assert str(repeats.value).endswith("follow. Use a smaller --repeat."), "no {…} to drop"
    with pytest.raises(CommandError) as both:
        permutations("{a, b} fox", 3, repeat=2)
    assert str(both.value).endswith("Use fewer {…} choices or a smaller --repeat.")


def test_the_cap_counts_the_distinct_prompts_not_the_combinations() -> None:
    """``{a, a, b}`` makes two jobs: it was refused under a cap of 2 as three prompts."""
    assert expansion("{a, a, b} fox", 2) == Expansion(("a fox", "b fox"), dropped=1)
    assert expansion("{a, a} fox", 2, repeat=2) == Expansion(("a fox", "a fox"), dropped=1)
    with pytest.raises(CommandError, match=r"6 jobs \(2 prompts × --repeat 3\)"):
        expansion("{a, a, b} fox", 5, repeat=3)


def test_more_combinations_than_are_made_are_refused_by_their_count() -> None:
    with pytest.raises(CommandError, match=r"1024 jobs \(1024 prompts\)"):
        expansion("{a,a}" * 10, 10)


def test_a_stray_brace_is_named() -> None:
    with pytest.raises(CommandError, match="never closed"):
        permutations("{red, blue fox", 10)
    with pytest.raises(CommandError, match="without its"):
        permutations("red} fox", 10)


@pytest.mark.parametrize(
    ("prompt", "flag"),
    [
        ("a fox --ar {16:9, 1:1}", "--ar"),
        ("a fox --ar={16:9,1:1}", "--ar"),
        ("a fox —aspect {2:3, 3:2}", "--aspect"),
        ("{a fox --ar 16:9, a cat}", "--ar"),
        ("{a fox --ar, a cat} 16:9", "--ar"),
        ("{a cat, a fox --AR} 16:9", "--ar"),
        ("a fox --ar{16:9, 1:1}", "--ar"),
    ],
)
def test_an_aspect_ratio_among_the_choices_is_refused_saying_why(prompt: str, flag: str) -> None:
    with pytest.raises(CommandError) as refused:
        expansion(prompt, 10)
    assert str(refused.value) == (
        f"{flag} cannot vary with {{…}} choices: the jobs of one command share one aspect "
        f"ratio. Give one ratio (like {flag} 16:9) outside the braces, and run the command "
        "again for another."
    )
    refuse_permuted_aspect("{red, blue} fox --ar 16:9")
    refuse_permuted_aspect("a fox \\{ --ar 16:9 --arx {a, b}")


def test_a_written_repeat_is_taken_out_of_the_prompt() -> None:
    assert take_repeat("{red, blue} fox --repeat 2 --v 6") == ("{red, blue} fox --v 6", 2)
    assert take_repeat("a fox --r=3") == ("a fox", 3)
    assert take_repeat("a fox --raw") == ("a fox --raw", None)
    with pytest.raises(CommandError, match="1 to 40"):
        take_repeat("a fox --repeat 0")


def test_an_expanded_prompt_is_sent_as_the_prompts_its_choices_make() -> None:
    assert sent_prompts("a fox --ar 16:9") == ("a fox --ar 16:9",)
    assert sent_prompts("a {blood}bath {fox, fox} --repeat 2") == ("a bloodbath fox",)
    assert sent_prompts("a {red, blue} fox") == ("a red fox", "a blue fox")
    stored = "a sign {OPEN, CLOSED} \\ done"
    assert sent_prompts(written_literally(stored)) == (stored,)
    assert sent_prompts("a {fox") == ("a {fox",), "unreadable: refused later, screened as typed"


def test_only_imagine_and_the_forms_that_read_it_expand_their_prompt() -> None:
    user, place = User("alice"), Place("fake", "w1", "c1")

    def form(action: str) -> ModalSubmit:
        return ModalSubmit(user=user, place=place, action=action, ref="j")

    for name in ("imagine", "chat", "diffusion.txt2img"):
        expands = expands_prompt(Command(user=user, place=place, name=name))
        assert expands is (name == "imagine"), name
    for action in ("remix_reroll", "outpaint_custom", "vary_region", "describe_pick2"):
        assert expands_prompt(form(action)), action
    for action in ("diff_init", "img2img_upload", "settings"):
        assert not expands_prompt(form(action)), action
    press = ButtonPress(user=user, place=place, message_id="m", action="reroll", ref="j")
    assert not expands_prompt(press)
