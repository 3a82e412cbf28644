"""Assemble the core from settings: job engines, chat, account commands, one shared budget."""

from __future__ import annotations

from bot.account import AccountFeature
from bot.api import ProviderClient
from bot.budget import RenderBudget
from bot.chat import ChatEngine
from bot.config import Settings
from bot.core import Core, SurfaceRegistry
from bot.events import Event, Place, User
from bot.jobs import JobEngines, JobTools, build_job_engines
from storage import Store

DESCRIBE_WAIT_SECONDS = 180.0


class ChatImageTools:
    """The chat model's ``generate_image`` and ``describe_image``, served by the job engine."""

    def __init__(self, jobs: JobTools) -> None:
        self._jobs = jobs

    async def generate_image(
        self, *, user: User, place: Place, prompt: str, origin: Event | None
    ) -> str:
        job = await self._jobs.generate_image(Event(user=user, place=place), prompt)
        if job.status == "create_failed":
            return f"The image job could not start: {job.error or 'the provider refused it'}."
        return f"Started image job {job.id}; its grid will be posted in this conversation."

    async def describe_image(
        self, *, user: User, place: Place, image_url: str, origin: Event | None
    ) -> str:
        prompts = await self._jobs.describe_prompts(
            Event(user=user, place=place), image_url, timeout=DESCRIBE_WAIT_SECONDS
        )
        if not prompts:
            return "The image could not be described; the reason was posted in the conversation."
        return "\n".join(f"{number}. {prompt}" for number, prompt in enumerate(prompts, 1))


def build_core(
    settings: Settings, store: Store, provider: ProviderClient
) -> tuple[Core, JobEngines]:
    """The core with every feature, and the job engines (for tests and benchmarks to inspect).

    One :class:`RenderBudget` is shared by chat streams and job progress edits, so together
    they stay within each platform's edit budget.
    """
    surfaces = SurfaceRegistry()
    budget = RenderBudget()
    jobs = build_job_engines(settings, store, provider, surfaces, budget=budget)
    chat = ChatEngine(store, provider, surfaces, budget=budget, tools=ChatImageTools(jobs.tools))
    account = AccountFeature(
        store,
        surfaces,
        plan=settings.api.plan,
        daily_credit_budget=settings.limits.daily_credit_budget_per_user,
    )
    core = Core(
        surfaces, [*jobs.features, chat, account], conversations=chat, services=jobs.services
    )
    return core, jobs
