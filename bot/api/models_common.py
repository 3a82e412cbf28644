"""Base of response models and lenient scalar types for odd provider shapes."""

from __future__ import annotations

import math
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator

from bot.api.errors import InvalidResponse


def _lenient_int(value: Any) -> Any:
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                return value
            return int(number) if math.isfinite(number) else value
    return value


def _lenient_str(value: Any) -> Any:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    return value


def _lenient_str_list(value: Any) -> Any:
    if isinstance(value, list):
        return [item if isinstance(item, str) else str(item) for item in value if item is not None]
    return value


LenientInt = Annotated[int, BeforeValidator(_lenient_int)]
"""An integer that also accepts ``1.0``, ``"12"`` and ``"12.5"`` (truncated)."""

LenientStr = Annotated[str, BeforeValidator(_lenient_str)]
"""A string that also accepts a number (``"seed": 123`` reads as ``"123"``)."""

StrList = Annotated[list[str], BeforeValidator(_lenient_str_list)]
"""A list of strings; non-string items are turned into text, ``null`` items dropped."""


class ResponseModel(BaseModel):
    """Base of provider responses: unknown fields are kept (``model_extra``), ``null`` means
    "use the default", so a sparse or slightly different body still reads."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data


Model = TypeVar("Model", bound=BaseModel)


def read_model(model: type[Model], body: Any, what: str) -> Model:
    """``body`` (parsed JSON) as ``model``; :class:`InvalidResponse` when it does not fit."""
    if not isinstance(body, dict):
        raise InvalidResponse(f"{what}: expected a JSON object, got {type(body).__name__}")
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise InvalidResponse(f"{what} has an unexpected shape: {error}") from None
