"""One actionable line for each way loading the settings can fail, without ever showing a value
(a configured value may be a secret)."""

from __future__ import annotations

import json
import os
import re
import tomllib
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ValidationError
from pydantic_settings import SettingsError

from genbot.settings import Settings

ENV_PREFIX = "GENBOT_"


def configuration_error(
    error: BaseException, config_path: Path | None, environ: Mapping[str, str] | None = None
) -> str | None:
    """The line to print for ``error`` raised by :func:`genbot.settings.load_settings`, or ``None``
    when it is not a configuration problem."""
    environ = os.environ if environ is None else environ
    where = str(config_path) if config_path is not None else "the configuration"
    if isinstance(error, ValidationError):
        return validation_error_line(error, environ)
    if isinstance(error, SettingsError):
        return settings_error_line(error, environ)
    if isinstance(error, tomllib.TOMLDecodeError):
        return f"{where} is not valid TOML: {error}"
    if isinstance(error, UnicodeDecodeError):
        return f"{where} is not UTF-8 text"
    if isinstance(error, OSError):
        return f"cannot read {where}: {error.strerror or error}"
    return None


def validation_error_line(error: ValidationError, environ: Mapping[str, str]) -> str:
    """``invalid configuration: [web] port (GENBOT_WEB__PORT): Input should be …; …``."""
    problems = []
    for details in error.errors(include_input=False, include_url=False, include_context=False):
        setting = setting_name(details["loc"])
        variable = env_variable(details["loc"], environ)
        source = f" ({variable})" if variable else ""
        problems.append(f"{setting}{source}: {details['msg']}")
    return "invalid configuration: " + "; ".join(problems)


def setting_name(loc: Sequence[int | str]) -> str:
    """``("web", "port")`` → ``[web] port``; ``("discord", "guild_ids", 0)`` →
    ``[discord] guild_ids[0]``."""
    if not loc:
        return "the settings"
    section, *rest = loc
    name = ""
    for part in rest:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return f"[{section}] {name}".rstrip()


def env_variable(loc: Sequence[int | str], environ: Mapping[str, str]) -> str | None:
    """The ``GENBOT_…`` variable that set the setting at ``loc``, if one did."""
    keys = [part for part in loc if isinstance(part, str)][:2]
    wanted = ENV_PREFIX + "__".join(keys).upper()
    return next((key for key in environ if key.upper() == wanted), None)


def settings_error_line(error: SettingsError, environ: Mapping[str, str]) -> str:
    """A value in the environment that had to be JSON (a list or table) and was not."""
    found = re.search(r'field "(\w+)" from source "EnvSettingsSource"', str(error))
    if found:
        section = found.group(1)
        culprits = not_json_variables(section, environ)
        if culprits:
            names = ", ".join(culprits)
            return (
                f"{names}: lists and tables in the environment are written as JSON, "
                'e.g. GENBOT_DISCORD__GUILD_IDS="[123, 456]"'
            )
        return f"the GENBOT_{section.upper()}__* environment variables could not be read"
    return f"invalid configuration: {error}"


def not_json_variables(section: str, environ: Mapping[str, str]) -> list[str]:
    """``GENBOT_<SECTION>__<KEY>`` variables for list or table settings that are not JSON."""
    field = Settings.model_fields.get(section)
    model = field.annotation if field is not None else None
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return []
    prefix = f"{ENV_PREFIX}{section.upper()}__"
    culprits = []
    for name, value in environ.items():
        if not name.upper().startswith(prefix):
            continue
        key = name[len(prefix) :].lower()
        setting = model.model_fields.get(key)
        if setting is None or typing.get_origin(setting.annotation) not in (list, dict):
            continue
        try:
            json.loads(value)
        except ValueError:
            culprits.append(name)
    return sorted(culprits)
