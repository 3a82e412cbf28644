"""Family B client: image task creation, fetch and multi_fetch (docs/provider.md, "Image
tasks")."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncGenerator, Collection, Iterable, Mapping
from contextlib import aclosing

from bot.api.errors import ApiError, BadRequest, InvalidResponse, TaskCreationRefused
from bot.api.http import CallSafety, HttpResult, HttpTransport
from bot.api.keys import KeyPool
from bot.api.models_common import read_model
from bot.api.models_task_records import (
    CreateTaskResponse,
    MultiFetchResponse,
    TaskRecord,
)
from bot.api.models_tasks import (
    MULTI_FETCH_MAX_IDS,
    BlendRequest,
    DescribeRequest,
    FetchRequest,
    ImagineRequest,
    InpaintRequest,
    MultiFetchRequest,
    OutpaintRequest,
    PanRequest,
    RerollRequest,
    SeedRequest,
    UpscaleRequest,
    VariationRequest,
    WebhookFields,
)
from bot.api.multi_fetch_part import MultiFetchPart
from bot.api.statuses import shown_reason
from bot.api.validation import (
    DEFAULT_UPSTREAM_CDN_HOSTS,
    RequestModel,
    check_http_url,
    check_webhook_address,
)

log = logging.getLogger(__name__)

PREFIX = "/gen/v2"
MULTI_FETCH_CONCURRENCY = 4


class TaskClient:
    """One method per image task endpoint. Request models carry only the fields each endpoint
    accepts (``process_mode`` only on imagine, describe and blend; no webhook on seed).

    Creation calls raise :class:`TaskCreationRefused` when the provider answers
    ``status: failed`` and are never repeated once sent. ``fetch`` and ``multi_fetch`` are
    retried (see :mod:`bot.api.http`).

    Every call takes ``key``: the name of the pool's key to send (a task id is its account's,
    so calls about a task use the key that made it; "": the first key). What the provider
    answers is reported to the pool (:meth:`bot.api.keys.KeyPool.observe`).
    """

    def __init__(
        self,
        transport: HttpTransport,
        keys: KeyPool,
        *,
        allow_insecure_webhooks: bool = False,
        upstream_cdn_hosts: Collection[str] = DEFAULT_UPSTREAM_CDN_HOSTS,
    ) -> None:
        self._transport = transport
        self.keys = keys
        self._allow_insecure_webhooks = allow_insecure_webhooks
        self.upstream_cdn_hosts = tuple(host.lower() for host in upstream_cdn_hosts)
        """Hosts whose image links describe and blend refuse (``[api] upstream_cdn_hosts``)."""

    def check(self, request: RequestModel) -> None:
        """Refuse (:class:`InvalidRequest`) what the provider would: a webhook address that is
        not ``https://domain`` on 443, and describe and blend links on the upstream CDN.
        Creations check it; features call it before storing a job."""
        if isinstance(request, WebhookFields) and request.webhook_endpoint:
            check_webhook_address(
                "webhook_endpoint",
                request.webhook_endpoint,
                allow_insecure=self._allow_insecure_webhooks,
            )
        if isinstance(request, DescribeRequest):
            check_http_url("image_url", request.image_url, cdn_hosts=self.upstream_cdn_hosts)
        if isinstance(request, BlendRequest):
            for position, url in enumerate(request.image_urls):
                check_http_url(f"image_urls[{position}]", url, cdn_hosts=self.upstream_cdn_hosts)

    async def imagine(self, request: ImagineRequest, *, key: str = "") -> CreateTaskResponse:
        """Start a 4-image grid from a prompt."""
        return await self._create("imagine", request, key)

    async def reroll(self, request: RerollRequest, *, key: str = "") -> CreateTaskResponse:
        """Redraw a parent task."""
        return await self._create("reroll", request, key)

    async def upscale(self, request: UpscaleRequest, *, key: str = "") -> CreateTaskResponse:
        """Upscale one image of a grid (or upscale an upscale with ``2x``/``4x``...)."""
        return await self._create("upscale", request, key)

    async def variation(self, request: VariationRequest, *, key: str = "") -> CreateTaskResponse:
        """Vary one image of a grid, or an upscale (``high_variation``/``low_variation``)."""
        return await self._create("variation", request, key)

    async def inpaint(self, request: InpaintRequest, *, key: str = "") -> CreateTaskResponse:
        """Redraw the masked area of an upscale."""
        return await self._create("inpaint", request, key)

    async def outpaint(self, request: OutpaintRequest, *, key: str = "") -> CreateTaskResponse:
        """Zoom out of an upscale."""
        return await self._create("outpaint", request, key)

    async def pan(self, request: PanRequest, *, key: str = "") -> CreateTaskResponse:
        """Extend an upscale in one direction."""
        return await self._create("pan", request, key)

    async def describe(self, request: DescribeRequest, *, key: str = "") -> CreateTaskResponse:
        """Start four candidate prompts for an image (read them with
        ``record.task_result.describe_prompts()``)."""
        return await self._create("describe", request, key)

    async def blend(self, request: BlendRequest, *, key: str = "") -> CreateTaskResponse:
        """Merge 2 to 5 images."""
        return await self._create("blend", request, key)

    async def seed(self, request: SeedRequest, *, key: str = "") -> CreateTaskResponse:
        """Start a seed task for a generation task; the seed is in the new task's
        ``task_result.seed``."""
        return await self._create("seed", request, key)

    async def fetch(self, task_id: str, *, key: str = "") -> TaskRecord:
        """The current record of one task (sent with the key that made it, like every read:
        docs/provider.md#read-keys)."""
        body = FetchRequest(task_id=task_id).to_body()
        result = await self._post("fetch", body, CallSafety.READ, key)
        return read_model(TaskRecord, result.body, "fetch")

    async def multi_fetch(
        self, task_ids: Iterable[str], *, key: str = "", known: Mapping[str, str] | None = None
    ) -> dict[str, TaskRecord | None]:
        """Records of any number of tasks of one key's account, by id (``None`` for ids the
        provider cannot resolve: answered ``null``; an id the answer does not mention, or whose
        record names another task, is left out, nothing learnt of it; the latter is logged:
        docs/provider.md#misnamed-record); a task still in flight reads as its id, type and
        status only (:meth:`MultiFetchResponse.record`). ``known``: task id → the status the
        caller has (``ANY_IN_FLIGHT``: whichever status in flight); a task still in flight in
        that status is left out of the answer (the caller learns nothing from it, and reading
        records was most of a poll's work: issue 32). Ids are sent in calls of at most 50, a few
        at a time; the first call that fails raises its error (the others are cancelled)."""
        merged: dict[str, TaskRecord | None] = {}
        async with aclosing(self.multi_fetch_parts(task_ids, key=key, known=known)) as parts:
            async for answers in parts:
                for part in answers:
                    if part.error is not None:
                        raise part.error
                    merged.update(part.records)
        return merged

    def multi_fetch_parts(
        self,
        task_ids: Iterable[str],
        *,
        key: str = "",
        known: Mapping[str, str] | None = None,
        spread: float = 0.0,
    ) -> AsyncGenerator[list[MultiFetchPart], None]:
        """:meth:`multi_fetch`, its calls' answers as they come: each step yields every answer
        that came since the caller last took some (at least one; in the order the calls were
        sent), so a caller can act on the first records while the other calls are under way,
        and takes the answers that came while it was busy together. A call that fails is a part
        with its ``error`` (the other calls go on). Close it (``contextlib.aclosing``) to cancel
        the calls not yet answered. Raises :class:`InvalidRequest` at once for an id that is
        not one (nothing is sent).

        ``spread``: when there are more calls than go at once (``MULTI_FETCH_CONCURRENCY``),
        call *i* of *n* starts no sooner than *i* × ``spread`` / *n* seconds after the first,
        so that they come evenly over ``spread`` seconds, not all at the start."""
        unique = list(dict.fromkeys(task_ids))
        requests = [
            MultiFetchRequest(task_ids=unique[start : start + MULTI_FETCH_MAX_IDS])
            for start in range(0, len(unique), MULTI_FETCH_MAX_IDS)
        ]
        if len(requests) <= MULTI_FETCH_CONCURRENCY:
            spread = 0.0
        offsets = [index * spread / len(requests) for index in range(len(requests))]
        return self._multi_fetch_parts(requests, key, known or {}, offsets)

    async def _multi_fetch_parts(
        self,
        requests: list[MultiFetchRequest],
        key: str,
        known: Mapping[str, str],
        offsets: list[float],
    ) -> AsyncGenerator[list[MultiFetchPart], None]:
        limit = asyncio.Semaphore(MULTI_FETCH_CONCURRENCY)
        answered: list[int] = []
        came = asyncio.Event()

        def answer(position: int, _: object) -> None:
            answered.append(position)
            came.set()

        calls = [
            asyncio.ensure_future(self._multi_fetch_part(request, key, known, limit, offset))
            for request, offset in zip(requests, offsets, strict=True)
        ]
        for position, call in enumerate(calls):
            call.add_done_callback(functools.partial(answer, position))
        try:
            taken = 0
            while taken < len(calls):
                await came.wait()
                came.clear()
                step = sorted(answered)
                answered.clear()
                taken += len(step)
                yield [calls[position].result() for position in step]
        finally:
            for call in calls:
                call.cancel()
            await asyncio.gather(*calls, return_exceptions=True)

    async def _multi_fetch_part(
        self,
        request: MultiFetchRequest,
        key: str,
        known: Mapping[str, str],
        limit: asyncio.Semaphore,
        offset: float,
    ) -> MultiFetchPart:
        asked = tuple(request.task_ids)
        await asyncio.sleep(offset)
        try:
            async with limit:
                result = await self._post("multi_fetch", request.to_body(), CallSafety.READ, key)
            envelope = read_model(MultiFetchResponse, result.body, "multi_fetch")
            if not envelope.data and envelope.message.lower() not in ("", "success"):
                raise InvalidResponse(
                    f"multi_fetch failed: code {envelope.code}, {envelope.message}"
                )
            misnamed = frozenset(task_id for task_id in asked if envelope.misnamed(task_id))
            for task_id in sorted(misnamed):
                log.warning(
                    "multi_fetch asked for task %s and answered a record naming task %s: "
                    "ignored, the task is asked again",
                    task_id,
                    envelope.named(task_id),
                )
            records = {
                task_id: envelope.record(task_id)
                for task_id in asked
                if task_id in envelope.data
                and task_id not in misnamed
                and not envelope.in_flight_as(task_id, known.get(task_id))
            }
        except ApiError as error:
            return MultiFetchPart(asked, error=error)
        return MultiFetchPart(asked, records, misnamed=misnamed)

    async def _create(self, endpoint: str, request: RequestModel, key: str) -> CreateTaskResponse:
        self.check(request)
        try:
            answer = await self._created(endpoint, request, key)
        except TaskCreationRefused as error:
            self.keys.observe(key, error)
            raise
        self.keys.observe(key, None, created=True)
        return answer

    async def _created(self, endpoint: str, request: RequestModel, key: str) -> CreateTaskResponse:
        body = request.to_body()
        secrets = (self.keys.secret(key), str(body.get("webhook_secret") or ""))
        try:
            result = await self._post(endpoint, body, CallSafety.CREATE, key)
        except BadRequest as error:
            if isinstance(error.body, dict) and error.body.get("status") == "failed":
                said = str(error.body.get("message") or "")
                raise TaskCreationRefused(shown_reason(said, secrets)) from None
            raise
        answer = read_model(CreateTaskResponse, result.body, endpoint)
        if answer.status == "failed":
            raise TaskCreationRefused(shown_reason(answer.message, secrets))
        if not answer.task_id:
            raise InvalidResponse(f"{endpoint}: no task_id in the answer")
        return answer

    async def _post(
        self, endpoint: str, body: dict[str, object], safety: CallSafety, key: str
    ) -> HttpResult:
        return await self.keys.post(
            self._transport, f"{PREFIX}/{endpoint}", body, safety=safety, key=key
        )
