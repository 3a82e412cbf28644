from __future__ import annotations

import pytest

from bot.features.jobs.buttons import LABELS, modal_for, read_settings
from bot.features.jobs.region_preview import EDIT_ACTION
from bot.kernel import MODAL_ACTIONS, CommandError

REF = "0123456789abcdef"


def test_forms_open_exactly_for_the_modal_actions_and_fit_platform_limits() -> None:
    opened = {action for action in [*LABELS, "settings"] if modal_for(action, REF) is not None}
    assert opened | {EDIT_ACTION} == set(MODAL_ACTIONS), "a preview's ✏️ Edit opens Vary (Region)"
    for action in opened:
        modal = modal_for(action, REF, prompt="p" * 5000)
        assert modal is not None
        assert modal.action == action and modal.ref == REF
        assert len(modal.custom_id) <= 100
        assert len(modal.title) <= 45 and 1 <= len(modal.fields) <= 5
        for field in modal.fields:
            assert len(field.label) <= 45 and len(field.placeholder) <= 100
            assert len(field.default) <= field.max_length


def test_form_fields_and_prefills() -> None:
    zoom = modal_for("outpaint_custom", "r", prompt="a fox --v 6")
    assert zoom is not None
    assert [f.id for f in zoom.fields] == ["zoom", "zoom_value", "prompt"]
    assert zoom.fields[2].default == "a fox --v 6"
    region = modal_for("vary_region", "r")
    assert region is not None and [f.id for f in region.fields] == ["area", "region", "prompt"]
    init = modal_for("diff_init", "r")
    assert init is not None and [f.id for f in init.fields] == ["prompt", "strength"]
    settings = modal_for("settings", "", defaults={"model": "llm-4"})
    assert settings is not None
    assert [f.id for f in settings.fields] == [
        "model",
        "temperature",
        "process_mode",
        "aspect_ratio",
        "remix",
    ]
    assert settings.fields[0].default == "llm-4"
    assert not any(f.required for f in settings.fields)
    channel = modal_for("settings", "channel")
    assert channel is not None and [f.id for f in channel.fields][-1] == "system_prompt"


def test_reading_a_submitted_settings_form() -> None:
    assert read_settings({"model": "LLM-4", "temperature": "0.3", "aspect_ratio": ""}) == {
        "model": "llm-4",
        "temperature": 0.3,
    }
    with pytest.raises(CommandError, match="aspect_ratio must look like 16:9"):
        read_settings({"aspect_ratio": "wide"})


def test_the_settings_form_suggests_the_models_it_is_given() -> None:
    modal = modal_for("settings", "", models=("llm-3.5-turbo", "llm-3.5-turbo-16k"))
    assert modal is not None
    [model] = [field for field in modal.fields if field.id == "model"]
    assert model.placeholder == "llm-3.5-turbo, llm-3.5-turbo-16k"
