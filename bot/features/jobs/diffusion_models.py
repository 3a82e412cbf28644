"""The diffusion checkpoint models genbot knows: the ones ``[api] diffusion_models`` names, then
the ones this deployment's diffusion jobs ran with (as the provider answered, so a model the
provider chose by default is learned too). They are offered where a model id is typed (Discord's
autocomplete, the playground's option chips, ``/help diffusion``), and ControlNet, which needs a
model, runs with the default one when none is given.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence

from bot.features.jobs.params import DiffusionParams, JobResult
from storage import Job

MODELS_KEPT = 20


class DiffusionModels:
    """The known checkpoint model ids (see the module docstring)."""

    def __init__(self, configured: Sequence[str] = ()) -> None:
        self.configured = tuple(dict.fromkeys(m.strip() for m in configured if m.strip()))
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._provider_default: str | None = None

    def observe(self, job: Job) -> None:
        """Remember the model a finished diffusion job ran with (and, when it asked for none,
        that it is the provider's default)."""
        if job.family != "diffusion":
            return
        asked = str(DiffusionParams.of(job).body.get("model_id") or "").strip()
        ran = str(JobResult.of(job).meta.get("model_id") or "").strip() or asked
        if not ran:
            return
        self._seen.pop(ran, None)
        self._seen[ran] = None
        while len(self._seen) > MODELS_KEPT:
            self._seen.popitem(last=False)
        if not asked and job.type == "txt2img":
            self._provider_default = ran

    def learn(self, jobs: Iterable[Job]) -> None:
        """Remember the models of finished jobs given newest first (the stored history)."""
        for job in reversed(list(jobs)):
            self.observe(job)

    def known(self) -> tuple[str, ...]:
        """Every known model id: the configured ones, then the most recently used first."""
        seen = [model for model in reversed(self._seen) if model not in self.configured]
        return (*self.configured, *seen)

    def default(self) -> str | None:
        """The model to use when none is given: the first configured one, else the one the
        provider chose when none was asked for; None when genbot knows neither."""
        if self.configured:
            return self.configured[0]
        return self._provider_default
