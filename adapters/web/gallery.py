"""The gallery's HTTP side (``/gallery``), translated to the core's
:class:`bot.kernel.ResultGallery`, which decides what a user may see:

- ``GET /api/gallery?text=…&type=…&channel=…&date=…&scope=…&after=…&limit=…``: a page of the
  user's results (``/jobs``' filters), newest first, with the links of their images;
- ``GET /api/gallery/images/{job id}``: a result's first image (``?size=small``: a thumbnail;
  ``?download=1``: as a file to save);
- ``POST /api/gallery/form`` ``{"job_id", "action"}``: one of the forms a result offers ("Use
  as init"), opened for this user as genbot's forms are (submitted through ``/api/modal``; the
  job starts in the channel the gallery was opened from).

Every request says where the user looks from (``from``: a playground channel, ``general`` by
default): the core checks each job there as a press there would be checked. Behind the
playground's access rules like every ``/api/`` path. Refusals: 400 (a filter), 404 (a job the
user may not see, or no image); never a 500 for what a request gives.
"""

from __future__ import annotations

from typing import Any, Final

from aiohttp import web

from adapters.web.handlers import json_body, string_field
from adapters.web.platform import PendingModal, web_place
from adapters.web.routes import ADAPTER, USER, json_error, static_file
from adapters.web.translate import BadInput, modal_json, parse_channel
from bot.kernel import N_, GalleryResult, Place, UserError, _

FILTERS: Final = ("text", "type", "channel", "date", "scope")
PAGE_SIZE: Final = 24
LIMIT_DIGITS: Final = 9
NO_GALLERY: Final = N_("The gallery is not available in this playground.")


async def page(request: web.Request) -> web.Response:
    """The gallery page (it asks the API for everything it shows)."""
    return static_file("gallery.html")


def _from(request: web.Request, value: object) -> tuple[str, Place]:
    channel = parse_channel(value, request[USER].id)
    return channel, web_place(channel)


def _limit(raw: str | None) -> int:
    """The page size asked for: ASCII digits (``²`` is a digit Python cannot read as a number);
    past nine of them, a number larger than any page."""
    if not raw:
        return PAGE_SIZE
    if not (raw.isascii() and raw.isdigit()):
        raise BadInput(_("'limit' must be a whole number, not {given}.", given=repr(raw[:20])))
    digits = raw.lstrip("0")
    return int(digits or "0") if len(digits) <= LIMIT_DIGITS else 10**LIMIT_DIGITS


def _result(result: GalleryResult, channel: str) -> dict[str, Any]:
    image = f"/api/gallery/images/{result.job_id}?from={channel}"
    return {
        "id": result.job_id,
        "title": result.title,
        "prompt": result.prompt,
        "type": result.type,
        "created": result.created_at,
        "channel": result.where,
        "images": result.images,
        "image": image,
        "thumbnail": f"{image}&size=small",
        "download": f"{image}&download=1",
        "forms": [{"action": action, "label": label} for action, label in result.forms],
    }


async def results(request: web.Request) -> web.Response:
    """A page of the user's results (see the module docstring)."""
    gallery = request.app[ADAPTER].gallery
    if gallery is None:
        return json_error(404, _(NO_GALLERY))
    channel, place = _from(request, request.query.get("from"))
    filters = {name: request.query[name] for name in FILTERS if request.query.get(name)}
    after = request.query.get("after") or None
    try:
        shown = await gallery.page(
            request[USER], place, filters, after, _limit(request.query.get("limit"))
        )
    except UserError as error:
        return json_error(400, str(error))
    return web.json_response(
        {
            "heading": shown.heading,
            "from": channel,
            "results": [_result(result, channel) for result in shown.results],
            "after": shown.after,
        }
    )


async def image(request: web.Request) -> web.Response:
    """A result's first image, for a user who may see it."""
    gallery = request.app[ADAPTER].gallery
    if gallery is None:
        return json_error(404, _(NO_GALLERY))
    _channel, place = _from(request, request.query.get("from"))
    small = request.query.get("size") == "small"
    try:
        found = await gallery.image(request[USER], place, request.match_info["job_id"], small=small)
    except UserError as error:
        return json_error(404, str(error))
    disposition = "attachment" if request.query.get("download") else "inline"
    return web.Response(
        body=found.data,
        content_type=found.content_type,
        headers={
            "Cache-Control": "private, max-age=3600",
            "Content-Disposition": f'{disposition}; filename="{found.filename}"',
        },
    )


async def form(request: web.Request) -> web.Response:
    """``{"job_id", "action", "from"}``: that form of the result, opened for this user in the
    channel ``from``; ``{"modal": …}`` for the page to show and submit through ``/api/modal``."""
    gallery = request.app[ADAPTER].gallery
    if gallery is None:
        return json_error(404, _(NO_GALLERY))
    body = await json_body(request)
    channel, place = _from(request, body.get("from"))
    user = request[USER]
    try:
        job_id, action = string_field(body, "job_id"), string_field(body, "action")
        modal = await gallery.form(user, place, job_id, action)
    except UserError as error:
        return json_error(404, str(error))
    request.app[ADAPTER].playground.remember_modal(user.id, PendingModal(modal, place, None))
    return web.json_response({"modal": modal_json(modal), "channel": channel})
