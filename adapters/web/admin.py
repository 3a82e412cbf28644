"""The admin page's HTTP side: ``/admin`` (the page) and ``/api/admin/…``, translated to the
core's :class:`bot.kernel.AdminConsole`, which decides who may see or change what.

Behind the playground's access rules (:mod:`adapters.web.access`: host, access token, session),
like every ``/api/`` path. The page's changes are ``POST``\\ s of JSON: the playground refuses
cross-site ``POST``\\ s (``Origin``, ``Sec-Fetch-Site``), its cookies are ``SameSite=Strict`` and a
cross-site form cannot send ``application/json`` — the CSRF defence of its other forms. Reads are
``GET``\\ s that change nothing. Refusals: 403 (not an admin), 400 (anything else, the console's
own sentence), 404 when the page is not wired (no core).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from aiohttp import web

from adapters.web.handlers import json_body, string_field
from adapters.web.routes import ADAPTER, USER, json_error, static_file
from adapters.web.translate import BadInput
from bot.kernel import N_, AdminConsole, NotAllowed, OptionValue, User, UserError, _

FILTERS: Final = ("user", "kind", "days", "page")
MODERATION_FIELDS: Final = ("action", "entry", "category")
NO_CONSOLE: Final = N_("The admin page is not available in this playground.")


async def page(request: web.Request) -> web.Response:
    """The admin page (it asks the API for everything it shows)."""
    return static_file("admin.html")


async def _answer(
    request: web.Request, work: Callable[[AdminConsole, User], Awaitable[web.Response]]
) -> web.Response:
    console = request.app[ADAPTER].console
    if console is None:
        return json_error(404, _(NO_CONSOLE))
    try:
        return await work(console, request[USER])
    except NotAllowed as error:
        return json_error(403, str(error))
    except UserError as error:
        return json_error(400, str(error))


def _where(request: web.Request) -> tuple[str, str]:
    return request.query.get("platform", ""), request.query.get("workspace", "")


def _filters(request: web.Request) -> dict[str, str]:
    return {name: request.query[name] for name in FILTERS if name in request.query}


async def overview(request: web.Request) -> web.Response:
    """Everything the page shows for ``?platform=…&workspace=…`` (and the audit filters)."""

    async def work(console: AdminConsole, user: User) -> web.Response:
        shown = await console.overview(user, *_where(request), _filters(request))
        return web.json_response(shown)

    return await _answer(request, work)


async def export(request: web.Request) -> web.Response:
    """The workspace's audit log as a JSON-lines download."""

    async def work(console: AdminConsole, user: User) -> web.Response:
        name, data = await console.export(user, *_where(request), _filters(request))
        return web.Response(
            body=data,
            content_type="application/x-ndjson",
            headers={
                "Content-Disposition": f'attachment; filename="{name}"',
                "Cache-Control": "no-store",
            },
        )

    return await _answer(request, work)


def _moderation_options(body: dict[str, Any]) -> dict[str, OptionValue]:
    options: dict[str, OptionValue] = {
        name: string_field(body, name) for name in MODERATION_FIELDS if body.get(name)
    }
    if body.get("pattern") is True:
        options["pattern"] = True
    minutes = body.get("minutes")
    if minutes not in (None, ""):
        if not isinstance(minutes, int | str):
            raise BadInput(_("'minutes' must be a whole number."))
        options["minutes"] = str(minutes)
    return options


async def moderation(request: web.Request) -> web.Response:
    """``{"platform", "workspace", "action", "entry", "category"?, "pattern"?, "minutes"?}``:
    what ``/admin moderation`` does with them; ``{"text": …}``."""
    body = await json_body(request)

    async def work(console: AdminConsole, user: User) -> web.Response:
        where = string_field(body, "platform"), string_field(body, "workspace")
        text = await console.moderate(user, *where, _moderation_options(body))
        return web.json_response({"text": text})

    return await _answer(request, work)


async def cancel(request: web.Request) -> web.Response:
    """``{"job_id"}``: the job cancelled as its ❌ Cancel button would; ``{"text": …}``."""
    body = await json_body(request)

    async def work(console: AdminConsole, user: User) -> web.Response:
        text = await console.cancel(user, string_field(body, "job_id"))
        return web.json_response({"text": text})

    return await _answer(request, work)
