"""Typed views of a job's ``parameters`` and its ``result``, which storage keeps as JSON.

A job's ``parameters`` are what genbot asked for, per type of job:

- :class:`ImageParams`: ``imagine`` and the image follow-ups (upscale, variation, reroll,
  inpaint, outpaint, pan); ``seed`` stores none;
- :class:`DescribeParams`: ``describe``;
- :class:`BlendParams`: ``blend``;
- :class:`DiffusionParams`: every diffusion job (its ``body`` is the request sent, as JSON).

Every job also keeps the language of its messages (:func:`with_language`, :func:`job_language`).

Each model writes the JSON shape genbot always stored (:meth:`to_json`, absent values left out)
and reads any stored shape (:meth:`of` / :meth:`from_json`): a missing key is its default, a key
of another type of job is ignored, so rows written before these models read unchanged.

:class:`JobResult` reads ``result``: what the provider answered (seed, describe prompts, image
id, diffusion ``meta``) and what genbot noted about the job's messages (image size, pressed and
refused follow-ups, cancelled, timed out, unconfirmed, accepted, lost).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

from bot.kernel import LANGUAGES, public_language
from storage import Job, NewJob, ResultChange


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _json(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


Untranslated = Literal["timeout", "error", "unreadable", "budget"]
"""Why a prompt genbot tried to translate went as written
(:mod:`bot.features.jobs.prompt_translation`)."""


@dataclass(frozen=True, kw_only=True)
class ImageParams:
    """An ``imagine`` job or an image follow-up: the aspect ratio and process mode it was
    asked with (a follow-up inherits its parent's), the model version of its prompt, whether
    remix was on, an outpaint's custom ``zoom_ratio``, and what a follow-up of an image without
    a prompt works on (``subject``: "a blend of 3 images"), for display."""

    aspect_ratio: str | None = None
    process_mode: str | None = None
    model_version: str | None = None
    remix: bool = False
    zoom_ratio: str | None = None
    subject: str | None = None
    references: tuple[str, ...] = ()
    """The URLs genbot hosted for an imagine's reference images."""
    reference_names: tuple[tuple[str, str], ...] = ()
    """Each hosted reference URL in the prompt with what names it for its user (``#2``, or
    the file's name where the platform's option named its role): shown in its place in
    titles. A follow-up keeps its parent's."""
    translated_from: str | None = None
    """The prompt as its user wrote it, when the job's prompt is its English translation."""
    not_translated: Untranslated | None = None
    """Why the prompt went as written when genbot tried to translate it."""

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ImageParams:
        """Read stored parameters (see the module docstring)."""
        return cls(
            aspect_ratio=_text(raw.get("aspect_ratio")),
            process_mode=_text(raw.get("process_mode")),
            model_version=_text(raw.get("model_version")),
            remix=bool(raw.get("remix", False)),
            zoom_ratio=_text(raw.get("zoom_ratio")),
            subject=_text(raw.get("subject")),
            references=_strings(raw.get("references")),
            reference_names=_names(raw.get("reference_names")),
            translated_from=_text(raw.get("translated_from")),
            not_translated=_untranslated(raw.get("not_translated")),
        )

    @classmethod
    def of(cls, job: Job) -> ImageParams:
        """``job``'s parameters read as an image job's."""
        return cls.from_json(job.parameters)

    def to_json(self) -> dict[str, Any]:
        """The stored shape (without references when there are none)."""
        values = asdict(self)
        values["references"] = list(self.references) or None
        values["reference_names"] = dict(self.reference_names) or None
        return _json(values)


@dataclass(frozen=True, kw_only=True)
class DescribeParams:
    """A ``describe`` job: the image described and the process mode."""

    image_url: str = ""
    process_mode: str | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> DescribeParams:
        """Read stored parameters (see the module docstring)."""
        return cls(
            image_url=str(raw.get("image_url") or ""), process_mode=_text(raw.get("process_mode"))
        )

    @classmethod
    def of(cls, job: Job) -> DescribeParams:
        """``job``'s parameters read as a describe job's."""
        return cls.from_json(job.parameters)

    def to_json(self) -> dict[str, Any]:
        """The stored shape."""
        return _json(asdict(self))


@dataclass(frozen=True, kw_only=True)
class BlendParams:
    """A ``blend`` job: the images blended, the dimension, the process mode, remix."""

    image_urls: tuple[str, ...] = ()
    dimension: str | None = None
    process_mode: str | None = None
    remix: bool = False

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> BlendParams:
        """Read stored parameters (see the module docstring)."""
        urls = raw.get("image_urls") or ()
        return cls(
            image_urls=tuple(str(url) for url in urls),
            dimension=_text(raw.get("dimension")),
            process_mode=_text(raw.get("process_mode")),
            remix=bool(raw.get("remix", False)),
        )

    @classmethod
    def of(cls, job: Job) -> BlendParams:
        """``job``'s parameters read as a blend job's."""
        return cls.from_json(job.parameters)

    def to_json(self) -> dict[str, Any]:
        """The stored shape."""
        values = asdict(self)
        values["image_urls"] = list(self.image_urls)
        return _json(values)


@dataclass(frozen=True, kw_only=True)
class DiffusionParams:
    """A diffusion job: the endpoint called (``None`` in rows that predate it: the job's type
    then), the request body sent, as JSON, and what it works on when it has no prompt
    (``subject``: the uploaded file's name, or the image it upscales), for display, and when
    the diffusion image its body sends was processed (``source_processed_at``: Upscale or Use as
    init of a diffusion image, and their 🔄), so 🔄 refuses it once the provider no longer keeps
    it (:mod:`bot.features.jobs.retention`)."""

    endpoint: str | None = None
    body: Mapping[str, Any] = field(default_factory=dict)
    subject: str | None = None
    source_processed_at: float | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> DiffusionParams:
        """Read stored parameters (see the module docstring)."""
        body = raw.get("body")
        return cls(
            endpoint=_text(raw.get("endpoint")),
            body=dict(body) if isinstance(body, Mapping) else {},
            subject=_text(raw.get("subject")),
            source_processed_at=_number(raw.get("source_processed_at")),
        )

    @classmethod
    def of(cls, job: Job) -> DiffusionParams:
        """``job``'s parameters read as a diffusion job's."""
        return cls.from_json(job.parameters)

    def to_json(self) -> dict[str, Any]:
        """The stored shape."""
        return _json(
            {
                "endpoint": self.endpoint,
                "body": dict(self.body),
                "subject": self.subject,
                "source_processed_at": self.source_processed_at,
            }
        )


JobParams = ImageParams | DescribeParams | BlendParams | DiffusionParams

LANGUAGE_KEY = "language"
"""Where a job's parameters keep the language of its messages (absent: English)."""


def with_language(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``parameters`` with the language of the messages of a job asked for now: the place's
    (:func:`bot.kernel.public_language`), kept only when it is not English, so English rows
    stay as they always were."""
    spoken = public_language()
    return dict(parameters) if spoken == LANGUAGES[0] else {**parameters, LANGUAGE_KEY: spoken}


def job_language(job: Job) -> str:
    """The language ``job``'s messages speak: the one chosen when it was asked for, whoever
    delivers it later (the tracker, another process, after a restart)."""
    stored = job.parameters.get(LANGUAGE_KEY)
    return stored if isinstance(stored, str) and stored in LANGUAGES else LANGUAGES[0]


def params_of(job: Job | NewJob) -> JobParams:
    """``job``'s parameters (stored, or about to be) as the model of its family and type."""
    if job.family == "diffusion":
        return DiffusionParams.from_json(job.parameters)
    if job.type == "describe":
        return DescribeParams.from_json(job.parameters)
    if job.type == "blend":
        return BlendParams.from_json(job.parameters)
    return ImageParams.from_json(job.parameters)


MODES = ("relax", "mixed", "fast", "turbo")


def asked_mode(job: Job | NewJob) -> str:
    """The process mode ``job`` (stored, or about to be) was asked to run in: its
    ``process_mode``, else one written in the prompt (``--fast``), else relax (the mode the
    provider will run it in: :func:`run_mode`; its result's :attr:`JobResult.mode` is the
    account's setting, not the mode it ran in: docs/provider.md#mode-fallback). A diffusion
    job has none: its callers ask only about image tasks."""
    params = params_of(job)
    mode = "" if isinstance(params, DiffusionParams) else params.process_mode or ""
    return mode if mode in MODES else _written_mode(job.prompt)


def run_mode(job: Job | NewJob) -> str:
    """The process mode the provider will run ``job`` in, by its rule (docs/provider.md): the
    asked mode, where ``mixed`` (like none) is the one written in the prompt, else relax —
    what a provider key's modes are read against."""
    mode = asked_mode(job)
    return _written_mode(job.prompt) if mode == "mixed" else mode


def _written_mode(prompt: str) -> str:
    """The last mode written in ``prompt`` (``--fast``), else relax."""
    written = [word for word in prompt.split() if word in ("--relax", "--fast", "--turbo")]
    return written[-1].removeprefix("--") if written else "relax"


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(item for item in value if isinstance(item, str))


def _names(value: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping):
        return ()
    return tuple((str(url), name) for url, name in value.items() if isinstance(name, str))


def _untranslated(value: object) -> Untranslated | None:
    reasons: tuple[Untranslated, ...] = get_args(Untranslated)
    return next((reason for reason in reasons if reason == value), None)


@dataclass(frozen=True, kw_only=True)
class JobResult:
    """A job's ``result``, read (see the module docstring). ``width``/``height``: the posted
    image's size; ``pressed``: follow-ups pressed on the result; ``refused_actions``: follow-ups
    the provider refused; ``unconfirmed``: the create call may have reached the provider;
    ``accepted``: the provider accepted a diffusion job but sent no id; ``mode``: the
    provider's ``meta.process_mode``, the setting of the account the task ran on (not
    necessarily the task's mode); ``lost``: the provider stopped knowing the task;
    ``withheld``: the categories of describe prompts moderation withheld;
    ``cancelled_by_admin``: an admin cancelled it for its requester, who is told so."""

    seed: str | None = None
    prompts: tuple[str, ...] = ()
    image_id: str | None = None
    process_time: float | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    width: int | None = None
    height: int | None = None
    pressed: tuple[str, ...] = ()
    refused_actions: tuple[str, ...] = ()
    cancelled: bool = False
    cancelled_by_admin: bool = False
    timed_out: bool = False
    unconfirmed: bool = False
    accepted: bool = False
    mode: str | None = None
    lost: bool = False
    withheld: tuple[str, ...] = ()
    references_unread: int = 0

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> JobResult:
        """Read a stored result (missing keys are defaults)."""
        meta = raw.get("meta")
        process_time = raw.get("process_time")
        seed = raw.get("seed")
        return cls(
            seed=None if seed in (None, "") else str(seed),
            prompts=tuple(str(prompt) for prompt in raw.get("prompts") or ()),
            image_id=_text(raw.get("image_id")),
            process_time=float(process_time) if isinstance(process_time, int | float) else None,
            meta=dict(meta) if isinstance(meta, Mapping) else {},
            width=_int(raw.get("width")),
            height=_int(raw.get("height")),
            pressed=_strings(raw.get("pressed")),
            refused_actions=_strings(raw.get("refused_actions")),
            cancelled=bool(raw.get("cancelled")),
            cancelled_by_admin=bool(raw.get("cancelled_by_admin")),
            timed_out=bool(raw.get("timed_out")),
            unconfirmed=bool(raw.get("unconfirmed")),
            accepted=bool(raw.get("accepted")),
            mode=_text(raw.get("mode")) or None,
            lost=bool(raw.get("lost")),
            withheld=_strings(raw.get("withheld")),
            references_unread=_int(raw.get("references_unread")) or 0,
        )

    @classmethod
    def of(cls, job: Job) -> JobResult:
        """``job``'s result, read."""
        return cls.from_json(job.result)

    @property
    def size(self) -> tuple[int, int] | None:
        """The posted image's size, when stored."""
        if self.width is None or self.height is None:
            return None
        return self.width, self.height


def result_with(
    job: Job,
    *,
    size: tuple[int, int] | None = None,
    pressed: Sequence[str] | None = None,
    refused_actions: Sequence[str] | None = None,
    cancelled: bool | None = None,
    cancelled_by_admin: bool | None = None,
    timed_out: bool | None = None,
    unconfirmed: bool | None = None,
    lost: bool | None = None,
) -> dict[str, Any]:
    """``job``'s stored result with what genbot notes about it set (only what is given;
    every other key, the provider's and other features', stays as stored)."""
    changed: dict[str, Any] = {
        "pressed": None if pressed is None else list(pressed),
        "refused_actions": None if refused_actions is None else list(refused_actions),
        "cancelled": cancelled,
        "cancelled_by_admin": cancelled_by_admin,
        "timed_out": timed_out,
        "unconfirmed": unconfirmed,
        "lost": lost,
    }
    if size is not None:
        changed.update(width=size[0], height=size[1])
    return {**job.result, **_json(changed)}


def adding_pressed(action: str) -> ResultChange:
    """A result change (:meth:`storage.JobWriter.change_job_result`) noting that ``action``'s
    button started a derivative; None when it is noted already."""
    return _adding("pressed", action)


def adding_refused(action: str) -> ResultChange:
    """A result change noting that the provider refused ``action``; None when it is noted
    already."""
    return _adding("refused_actions", action)


def _adding(key: Literal["pressed", "refused_actions"], action: str) -> ResultChange:
    def change(result: dict[str, Any]) -> dict[str, Any] | None:
        noted = _strings(result.get(key))
        if action in noted:
            return None
        return {**result, key: sorted({*noted, action})}

    return change
