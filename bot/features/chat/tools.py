"""Built-in tools the chat model may call, offered as the request's ``functions``.

The image engine implements :class:`ImageTools`; the chat engine turns the model's function call
into one of its methods and sends the returned sentence back to the model as the function result.
Every problem (invalid JSON arguments, a missing argument, a refusal such as a job cap) becomes a
result that starts with ``Error:`` so the model can explain it; nothing here raises.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

from bot.api import (
    ApiError,
    FunctionArgumentsError,
    FunctionCall,
    FunctionDefinition,
    FunctionParameters,
    FunctionProperty,
)
from bot.kernel import CommandError, Event, Place, User, UserError
from storage import Job

log = logging.getLogger(__name__)

MAX_RESULT_CHARS = 4000


class ImageTools(Protocol):
    """What the image engine offers the chat model."""

    async def generate_image(
        self, *, user: User, place: Place, prompt: str, origin: Event | None
    ) -> str:
        """Start an imagine job for ``user`` whose grid is posted in ``place``; returns a short
        sentence for the model (e.g. ``Started image job abc123; …``)."""
        ...

    async def describe_image(
        self, *, user: User, place: Place, image_url: str, origin: Event | None
    ) -> str:
        """Describe the image at ``image_url`` (waiting, bounded, for the four prompts) and
        return them as text for the model."""
        ...


GENERATE_IMAGE = FunctionDefinition(
    name="generate_image",
    description=(
        "Create four images from a text prompt. The image grid is posted in this conversation "
        "when it is ready; tell the user it is on its way."
    ),
    parameters=FunctionParameters(
        properties={
            "prompt": FunctionProperty(
                type="string", description="What the image should show, in English"
            )
        },
        required=["prompt"],
    ),
)
DESCRIBE_IMAGE = FunctionDefinition(
    name="describe_image",
    description="Suggest four prompts that could have produced the image at a URL.",
    parameters=FunctionParameters(
        properties={
            "image_url": FunctionProperty(type="string", description="The image's http(s) URL")
        },
        required=["image_url"],
    ),
)
FUNCTIONS: tuple[FunctionDefinition, ...] = (GENERATE_IMAGE, DESCRIBE_IMAGE)


@dataclass(frozen=True)
class ToolContext:
    """Who asked and where the tool's output (an image grid, say) belongs."""

    user: User
    place: Place
    origin: Event | None


def _text_argument(arguments: dict[str, Any], name: str) -> str | None:
    value = arguments.get(name)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _clip(text: str) -> str:
    return text if len(text) <= MAX_RESULT_CHARS else text[: MAX_RESULT_CHARS - 1] + "…"


async def run_tool(tools: ImageTools, call: FunctionCall, context: ToolContext) -> str:
    """Run the model's function call; the result (or the problem) as text for the model."""
    try:
        arguments = call.parsed_arguments()
    except FunctionArgumentsError as error:
        return (
            f"Error: the arguments of {call.name} were not a valid JSON object ({error}). "
            "Call it again with a JSON object matching its parameters."
        )
    try:
        if call.name == GENERATE_IMAGE.name:
            prompt = _text_argument(arguments, "prompt")
            if prompt is None:
                return "Error: generate_image needs a non-empty string argument `prompt`."
            result = await tools.generate_image(
                user=context.user, place=context.place, prompt=prompt, origin=context.origin
            )
        elif call.name == DESCRIBE_IMAGE.name:
            url = _text_argument(arguments, "image_url")
            if url is None:
                return "Error: describe_image needs a non-empty string argument `image_url`."
            result = await tools.describe_image(
                user=context.user, place=context.place, image_url=url, origin=context.origin
            )
        else:
            offered = ", ".join(function.name for function in FUNCTIONS)
            return f"Error: there is no function named {call.name!r}; available: {offered}."
    except (UserError, CommandError) as error:
        return _clip(f"Error: {error}")
    except ApiError as error:
        return _clip(f"Error: {error.user_message}")
    except Exception:
        log.exception("chat tool %s failed", call.name)
        return f"Error: {call.name} failed unexpectedly on genbot's side."
    return _clip(result)


class JobHandle(Protocol):
    """The image engine's handle for chat (``bot.features.jobs.ChatJobs``): jobs started for an
    event are posted in that event's place."""

    async def generate_image(
        self, event: Event, prompt: str, *, aspect_ratio: str | None = None
    ) -> Job:
        """Start an imagine job in ``event``'s place."""
        ...

    async def describe_prompts(
        self, event: Event, image_url: str, timeout: float = ...
    ) -> list[str]:
        """Describe ``image_url`` in ``event``'s place and return its four prompts."""
        ...


class ChecksPrompts(Protocol):
    """What checks a prompt the model wrote before it becomes a job (moderation)."""

    async def refused_prompt(self, place: Place, prompt: str) -> str | None:
        """The category of the rule ``prompt`` breaks in ``place``, or None."""
        ...


class ChatImageTools:
    """:class:`ImageTools` over a :class:`JobHandle`: jobs go to the conversation's place,
    keeping the answered event (and its platform context) when it is in that place; a prompt
    ``moderation`` refuses starts nothing."""

    def __init__(
        self,
        jobs: JobHandle,
        *,
        describe_timeout: float = 120.0,
        moderation: ChecksPrompts | None = None,
    ) -> None:
        self.jobs = jobs
        self.describe_timeout = describe_timeout
        self.moderation = moderation

    @staticmethod
    def _event(user: User, place: Place, origin: Event | None) -> Event:
        if origin is not None and origin.place == place and origin.user == user:
            return origin
        return Event(user=user, place=place)

    async def generate_image(
        self, *, user: User, place: Place, prompt: str, origin: Event | None
    ) -> str:
        if self.moderation is not None and (
            category := await self.moderation.refused_prompt(place, prompt)
        ):
            return (
                f"Error: genbot's moderation refused this prompt: it matches its rules on "
                f"{category}. Tell the user; do not try another wording of it."
            )
        job = await self.jobs.generate_image(self._event(user, place, origin), prompt)
        if job.status == "create_failed":
            return f"Error: the image job could not start: {job.error or 'refused'}."
        if job.status == "unknown":
            return (
                f"The image service did not confirm job {job.id}; genbot is watching for it and "
                "will post the grid in this conversation if it arrives. Do not start it again."
            )
        return (
            f"Started image job {job.id} for the prompt {prompt!r}; the grid of four images will "
            "be posted in this conversation when it is ready."
        )

    async def describe_image(
        self, *, user: User, place: Place, image_url: str, origin: Event | None
    ) -> str:
        event = self._event(user, place, origin)
        try:
            prompts = await self.jobs.describe_prompts(event, image_url, self.describe_timeout)
        except TimeoutError:
            return (
                "Error: the description is taking long; its prompts will be posted in this "
                "conversation when they are ready."
            )
        if not prompts:
            return "Error: the image could not be described (the failure is shown in the chat)."
        numbered = "\n".join(f"{number}. {prompt}" for number, prompt in enumerate(prompts, 1))
        return (
            "Four prompts that could have produced the image (also posted in this conversation "
            f"with buttons 1–4 to imagine them):\n{numbered}"
        )
