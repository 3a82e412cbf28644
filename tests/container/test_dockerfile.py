"""The Dockerfile, read instruction by instruction (no Docker daemon here): multi-stage on a slim
Python, a non-root user, a ``/data`` volume, a health check on ``/healthz``, ``genbot run`` by
default, and only files that exist copied in."""

from __future__ import annotations

import pytest

from tests.container.dockerfile import DOCKERFILE, ROOT, Stage, stages


@pytest.fixture
def build_and_runtime() -> tuple[Stage, Stage]:
    found = stages(DOCKERFILE.read_text())
    assert len(found) == 2, "a build stage and a runtime stage"
    return found[0], found[1]


def test_both_stages_use_a_slim_python(build_and_runtime: tuple[Stage, Stage]) -> None:
    for stage in build_and_runtime:
        image, _, tag = stage.base.partition(":")
        assert image == "python" and tag.endswith("-slim"), stage.base
        assert tuple(int(part) for part in tag.split("-")[0].split(".")) >= (3, 11)


def test_the_runtime_runs_as_a_user_that_is_not_root(
    build_and_runtime: tuple[Stage, Stage],
) -> None:
    _, runtime = build_and_runtime
    [user] = runtime.all("USER")
    assert user.arguments not in ("root", "0", "0:0")
    created = " ".join(i.arguments for i in runtime.all("RUN"))
    assert "useradd" in created and user.arguments in created.split()
    keywords = [i.keyword for i in runtime.instructions]
    assert keywords.index("USER") > max(i for i, k in enumerate(keywords) if k == "RUN")


def test_data_is_a_volume_and_the_database_lives_there(
    build_and_runtime: tuple[Stage, Stage],
) -> None:
    _, runtime = build_and_runtime
    [volume] = runtime.all("VOLUME")
    assert volume.words() == ["/data"]
    env = " ".join(i.arguments for i in runtime.all("ENV"))
    assert "GENBOT_STORAGE__PATH=/data/genbot.db" in env.split()
    assert "GENBOT_OPS__ENABLED=true" in env.split()


def test_the_health_check_asks_the_ops_listener(build_and_runtime: tuple[Stage, Stage]) -> None:
    _, runtime = build_and_runtime
    [check] = runtime.all("HEALTHCHECK")
    options, _, command = check.arguments.partition("CMD")
    assert "--interval" in options and "--timeout" in options
    assert "/healthz" in command and "9108" in command
    [expose] = runtime.all("EXPOSE")
    assert "9108" in expose.words()


def test_genbot_run_is_the_default_command(build_and_runtime: tuple[Stage, Stage]) -> None:
    _, runtime = build_and_runtime
    [command] = runtime.all("CMD")
    assert command.words() == ["genbot", "run"]
    assert runtime.all("ENTRYPOINT") == [], "so that `docker run … genbot demo` works"
    [signal] = runtime.all("STOPSIGNAL")
    assert signal.arguments == "SIGTERM"


def test_every_copied_path_exists_and_tests_stay_out(
    build_and_runtime: tuple[Stage, Stage],
) -> None:
    for stage in build_and_runtime:
        for copy in stage.all("COPY"):
            words = [w for w in copy.words() if not w.startswith("--")]
            if copy.arguments.startswith("--from="):
                continue
            for source in words[:-1]:
                assert (ROOT / source).exists(), source
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".venv", ".git", "tests"} <= set(ignored)
