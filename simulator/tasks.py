"""Image task API (family B): ``POST /gen/v2/*`` routes and the engine that runs tasks.

Creation endpoints answer CreateTaskResponse (2.5). Rule violations answer 400
``{"error": {"message": ...}}``; the four body-level failures of 2.5 answer 200 with
``{"task_id": "", "status": "failed", "message": ...}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web

from simulator import task_rules as rules
from simulator.images import StoredImage, grid_spec, single_spec
from simulator.references import unfetchable
from simulator.state import STATE, SimulatorState, api_key_header, request_record
from simulator.task_builders import TaskDraft
from simulator.task_derivatives import BUILDERS
from simulator.task_model import ImageTask, fetch_record, multi_fetch_record, plan_lifecycle
from simulator.task_rules import Body, BodyFailure, RuleError
from simulator.webhooks import WebhookSender

MULTI_FETCH_LIMIT = 50
KEY_OPTIONAL = ("seed", "fetch", "multi_fetch")
SETTLE_INTERVAL = 0.05


def error_response(status: int, message: str) -> web.Response:
    """The JSON error body the simulator uses for 400, 401, 404 and 500."""
    return web.json_response({"error": {"message": message}}, status=status)


def unauthorized() -> web.Response:
    return error_response(401, "invalid or missing API key (send it in the X-API-KEY header)")


def base_url_of(request: web.Request) -> str:
    """The simulator's own address as the client used it."""
    return str(request.url.origin())


class TaskEngine:
    """Creates tasks and settles them: finished tasks are charged, failed ones released, and
    webhooks sent for both."""

    def __init__(self, state: SimulatorState, webhooks: WebhookSender) -> None:
        self.state = state
        self.webhooks = webhooks
        self.unsettled: dict[str, ImageTask] = {}
        state.settle_hooks.append(self.settle)

    def create(self, draft: TaskDraft, base_url: str) -> ImageTask:
        state = self.state
        if draft.same_index_key is not None:
            existing = state.task_children.get(draft.same_index_key)
            if existing is not None and state.tasks[existing].outcome != "failed":
                raise BodyFailure(rules.SAME_INDEX)
        mode, setting = draft.mode, draft.account.setting
        if draft.origin is None:
            mode = draft.account.run_mode(mode, rules.durations(draft.kind, mode)[1])
        price = rules.price(draft.kind, mode, draft.index)
        if not draft.account.freeze(price):
            raise BodyFailure(rules.NO_CREDIT)
        rng = state.task_rng
        task_id = state.new_uuid()
        lifecycle = plan_lifecycle(rng, draft.kind, mode, state.config.time_scale, draft.error)
        cells = draft.art(rng) if draft.art is not None else ()
        task = ImageTask(
            task_id=task_id,
            task_type=draft.task_type,
            kind=draft.kind,
            account_key=draft.account.key,
            origin_task_id=draft.origin.task_id if draft.origin else "",
            prompt=draft.prompt,
            version=draft.version,
            mode=mode,
            account_mode=setting,
            aspect=draft.aspect,
            index=draft.index,
            task_input=draft.task_input,
            task_request={},
            created_at=state.now(),
            lifecycle=lifecycle,
            price=price,
            base_url=base_url,
            image_id=rng.getrandbits(128).to_bytes(16, "big").hex() if cells else "",
            art_seed=cells[0].art_seed if cells else 0,
            describe_prompts=draft.describe_prompts,
            seed_value=draft.seed_value,
            webhook_endpoint=draft.webhook[0],
            webhook_secret=draft.webhook[1],
            bot_id=rng.randint(1000, 9999),
            result_message_id=str(rng.getrandbits(60)),
            rules=state.config.rules,
        )
        if cells:
            spec = (
                grid_spec(draft.aspect, cells)
                if len(cells) == 4
                else single_spec(draft.aspect, cells[0], draft.long_side)
            )
            ready = task.ends_at if lifecycle.outcome == "finished" else math.inf
            state.images[task.image_id] = StoredImage(spec, ready)
        state.tasks[task_id] = task
        if draft.same_index_key is not None:
            state.task_children[draft.same_index_key] = task_id
        state.count_creation(draft.task_type)
        self.unsettled[task_id] = task
        return task

    def settle(self) -> None:
        now = self.state.now()
        for task_id, task in list(self.unsettled.items()):
            if now < task.ends_at and not task.lost:
                continue
            del self.unsettled[task_id]
            task.settled = True
            account = self.state.accounts[task.account_key]
            if task.lost:
                account.release(task.price)
                continue
            if task.outcome == "finished":
                account.charge(task.price)
            else:
                account.release(task.price)
            if task.webhook_endpoint:
                payload = webhook_payload(task, now)
                self.webhooks.deliver(task_id, task.webhook_endpoint, task.webhook_secret, payload)


def webhook_payload(task: ImageTask, now: float) -> dict[str, Any]:
    """The body of a task's webhook in its dialect: the fetch record, ``{"task_id",
    "status"}`` only, or the multi_fetch record under ``data``."""
    shape = task.rules.webhook_body
    if shape == "signal":
        return {"task_id": task.task_id, "status": task.status_at(now)}
    if shape == "wrapped":
        return {"data": multi_fetch_record(task, now)}
    return fetch_record(task, now)


def forbidden() -> web.Response:
    return error_response(403, "this account is suspended: it may not create anything")


ENGINE: web.AppKey[TaskEngine] = web.AppKey("genbot_simulator_tasks", TaskEngine)
WEBHOOKS: web.AppKey[WebhookSender] = web.AppKey("genbot_simulator_webhooks", WebhookSender)


async def _json_object(request: web.Request) -> dict[str, Any]:
    try:
        data = json.loads(await request.text())
    except (ValueError, UnicodeDecodeError):
        raise BodyFailure(rules.BODY_PARSING_FAILED) from None
    if not isinstance(data, dict):
        raise BodyFailure(rules.BODY_PARSING_FAILED)
    return data


def _sanitized(data: dict[str, Any]) -> dict[str, Any]:
    return {k: ("***" if k == "webhook_secret" and v else v) for k, v in data.items()}


def creation_handler(endpoint: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The handler of ``POST /gen/v2/{endpoint}``."""
    build = BUILDERS[endpoint]

    async def handle(request: web.Request) -> web.Response:
        state = request.app[STATE]
        key = api_key_header(request)
        account = state.account_for(key)
        if account is None and (key is not None or endpoint not in KEY_OPTIONAL):
            return unauthorized()
        if account is not None and account.suspended:
            return forbidden()
        try:
            data = await _json_object(request)
            body = Body(data)
            body.check_types()
            draft = build(state, body, account)
            if draft.references and draft.error is None:
                draft.error = await unfetchable(draft.references)
            task = request.app[ENGINE].create(draft, base_url_of(request))
        except RuleError as error:
            return error_response(400, str(error))
        except BodyFailure as error:
            return web.json_response({"task_id": "", "status": "failed", "message": str(error)})
        task.task_request = _sanitized(data)
        record = request_record(request)
        if record is not None:
            record.created_id = task.task_id
        return web.json_response({"task_id": task.task_id, "status": "success", "message": ""})

    return handle


async def _lookup_body(request: web.Request) -> dict[str, Any] | web.Response:
    key = api_key_header(request)
    if key is not None and request.app[STATE].account_for(key) is None:
        return unauthorized()
    try:
        return await _json_object(request)
    except BodyFailure:
        return error_response(400, "the body must be a JSON object")


async def fetch(request: web.Request) -> web.Response:
    """``POST /gen/v2/fetch``: the task record (2.6); 400 for an unknown id."""
    body = await _lookup_body(request)
    if isinstance(body, web.Response):
        return body
    task_id = body.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        return error_response(400, "task_id is required and must be a string")
    state = request.app[STATE]
    state.settle()
    task = state.tasks.get(task_id)
    if task is None or not state.readable(task.account_key, api_key_header(request)):
        return error_response(400, f"task {task_id} does not exist")
    return web.json_response(fetch_record(task, state.now()))


async def multi_fetch(request: web.Request) -> web.Response:
    """``POST /gen/v2/multi_fetch``: up to 50 records keyed by id, ``null`` for unknown ids."""
    body = await _lookup_body(request)
    if isinstance(body, web.Response):
        return body
    task_ids = body.get("task_ids")
    if not isinstance(task_ids, list) or not all(isinstance(t, str) for t in task_ids):
        return error_response(400, "task_ids is required and must be an array of strings")
    if len(task_ids) > MULTI_FETCH_LIMIT:
        return error_response(400, f"task_ids holds at most 50 ids (got {len(task_ids)})")
    state = request.app[STATE]
    state.settle()
    now = state.now()
    reader = api_key_header(request)
    data = {
        task_id: multi_fetch_record(task, now)
        if (task := state.tasks.get(task_id)) is not None
        and state.readable(task.account_key, reader)
        else None
        for task_id in task_ids
    }
    return web.json_response({"code": 200, "data": data, "message": "success"})


async def _tasks_context(app: web.Application) -> AsyncIterator[None]:
    engine = app[ENGINE]

    async def tick() -> None:
        while True:
            engine.settle()
            await asyncio.sleep(SETTLE_INTERVAL)

    ticker = asyncio.get_running_loop().create_task(tick())
    yield
    ticker.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await ticker
    await app[WEBHOOKS].close()


def add_task_routes(app: web.Application) -> None:
    """Register ``POST /gen/v2/*`` and the task engine's lifecycle on ``app``."""
    state = app[STATE]
    webhooks = WebhookSender(state)
    app[WEBHOOKS] = webhooks
    app[ENGINE] = TaskEngine(state, webhooks)
    for endpoint in BUILDERS:
        app.router.add_post(f"/gen/v2/{endpoint}", creation_handler(endpoint))
    app.router.add_post("/gen/v2/fetch", fetch)
    app.router.add_post("/gen/v2/multi_fetch", multi_fetch)
    app.cleanup_ctx.append(_tasks_context)
