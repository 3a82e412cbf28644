# syntax=docker/dockerfile:1
# genbot's container image: `docker build -t genbot .`, then `docker run … genbot` (genbot run)
# or `docker run -p 8080:8080 -e GENBOT_WEB__ACCESS_TOKEN=… genbot genbot demo --host 0.0.0.0`.
# Untested as an image: it was written where no Docker daemon runs (see README, "Container").
# tests/container checks what can be checked without one, including these install steps.

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY genbot ./genbot
COPY bot ./bot
COPY adapters ./adapters
COPY storage ./storage
COPY simulator ./simulator
RUN python -m venv /opt/genbot
# The message catalogs are compiled (.po → .mo) before the install packages them (Makefile, catalogs).
RUN /opt/genbot/bin/pip install --no-cache-dir "Babel>=2.14,<3"
RUN /opt/genbot/bin/pybabel compile -D genbot -d bot/locales
RUN /opt/genbot/bin/pip install --no-cache-dir .

FROM ${PYTHON_IMAGE} AS runtime
RUN useradd --system --uid 10001 --user-group --home-dir /data --no-create-home genbot \
    && mkdir -p /data \
    && chown genbot:genbot /data \
    && chmod 0700 /data
COPY --from=build /opt/genbot /opt/genbot
COPY config/genbot.example.toml /etc/genbot/genbot.example.toml
ENV PATH=/opt/genbot/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    GENBOT_STORAGE__PATH=/data/genbot.db \
    GENBOT_OPS__ENABLED=true \
    GENBOT_OPS__HOST=0.0.0.0 \
    GENBOT_OPS__PORT=9108 \
    GENBOT_LOGGING__FORMAT=json
VOLUME ["/data"]
WORKDIR /data
USER genbot
EXPOSE 8080 8788 9108
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('GENBOT_OPS__PORT', '9108'), timeout=4)"]
CMD ["genbot", "run"]
