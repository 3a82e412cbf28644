"""The command catalogue is consistent: every adapter and the core build on it."""

from __future__ import annotations

from bot.kernel import CHAT_MODELS, COMMANDS, COMMANDS_BY_NAME, REFERENCE_OPTIONS, command


def test_names_are_unique_and_indexed() -> None:
    assert len(COMMANDS_BY_NAME) == len(COMMANDS)
    assert command("diffusion.txt2img").free_text == "prompt"


def test_every_capability_has_a_command() -> None:
    expected = {
        "chat",
        "imagine",
        "describe",
        "blend",
        "diffusion.txt2img",
        "diffusion.img2img",
        "diffusion.upscale",
        "diffusion.controlnet",
        "settings",
        "usage",
        "jobs",
        "show",
        "forget-me",
        "help",
        "admin.moderation",
        "admin.audit",
        "prefer.option",
        "prefer.suffix",
    }
    assert set(COMMANDS_BY_NAME) == expected


def test_reference_options_name_the_most_references() -> None:
    """Their descriptions are whole catalog texts with the number written in: it is the most
    (MAX_REFERENCES, which also numbers /imagine's uploads)."""
    imagine = command("imagine")
    for name in REFERENCE_OPTIONS:
        option = imagine.option(name)
        assert option is not None
        assert f"(at most {imagine.numbered_uploads} in all)" in option.description


def test_options_are_well_formed() -> None:
    for spec in COMMANDS:
        names = [o.name for o in spec.options]
        assert len(names) == len(set(names)), spec.name
        if spec.free_text is not None:
            assert spec.option(spec.free_text) is not None, spec.name
        flags = [f for o in spec.options for f in (*o.flags, *(v[0] for v in o.flag_values))]
        assert len(flags) == len(set(flags)), spec.name
        for option in spec.options:
            assert len(option.description) <= 100, (spec.name, option.name)
            assert all(f.startswith("--") for f in option.flags)


def test_model_choices_are_the_spec_models() -> None:
    assert len(CHAT_MODELS) == 10
    assert command("chat").option("model") is not None
    assert command("chat").option("model").autocomplete  # type: ignore[union-attr]
