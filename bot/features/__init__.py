"""What genbot does, above the outbox and the kernel: image and diffusion jobs
(:mod:`bot.features.jobs`, their tracking in :mod:`bot.features.jobs.tracking`), conversations
(:mod:`bot.features.chat`), account commands (:mod:`bot.features.account`), the home
(:mod:`bot.features.home`) and the shown provider waits (:mod:`bot.features.provider_waits`).
The router reaches them through its ``Feature`` protocol; :mod:`genbot.compose` builds them.
"""
