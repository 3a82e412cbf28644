"""``genbot demo``: one command serves the playground on the real core and the simulator, and
Ctrl-C stops it cleanly and deletes its data."""

from __future__ import annotations

import signal
import socket
from pathlib import Path
from typing import Any

import pytest

from genbot.demo import EPHEMERAL_PORTS, FIRST_PICKED_PORT, free_port
from simulator.diffusion import DEFAULT_MODEL
from tests.genbot.process import clean_env, genbot
from tests.genbot.stack import PlaygroundUser, labels, playground_user


def exists(path: Path) -> bool:
    return path.exists()


def contents(folder: Path) -> list[Path]:
    return list(folder.iterdir())


async def me(user: PlaygroundUser) -> dict[str, Any]:
    async with user.session.get("/api/history") as response:
        found: dict[str, Any] = (await response.json())["me"]
        return found


URL_LINE = r"genbot demo: open (http://127\.0\.0\.1:(\d+)) in your browser"


async def test_demo_serves_a_working_playground_and_stops_cleanly_on_ctrl_c(
    tmp_path: Path,
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    port = free_port()
    async with genbot(
        "demo",
        "--port",
        str(port),
        env=clean_env(tmp=temp),
        cwd=tmp_path,
        log=tmp_path / "demo.log",
    ) as demo:
        url, printed_port = (await demo.line_matching(URL_LINE)).groups()
        assert int(printed_port) == port
        data_dir = Path((await demo.line_matching(r"data in (\S+)")).group(1))
        assert data_dir.parent == temp and (data_dir / "genbot.db").is_file()

        admin_link = (await demo.line_matching(r"admin \(.*\): (\S+)")).group(1)
        async with playground_user(url) as user, playground_user(url) as admin:
            async with user.session.get("/") as page:
                assert page.status == 200 and "genbot playground</title>" in await page.text()
            async with admin.session.get(admin_link.removeprefix(url)) as page:
                assert page.status == 200 and page.url.query == {}, "the token leaves the bar"
            assert (await me(user))["admin"] is False, "a local user is not an admin"
            assert (await me(admin))["admin"] is True
            async with user.session.get("/api/commands") as response:
                commands = {c["name"]: c for c in (await response.json())["commands"]}
            assert {"imagine", "chat", "describe", "blend", "settings", "usage"} <= set(commands)
            controlnet = commands["diffusion.controlnet"]["options"]
            [model] = [option["choices"] for option in controlnet if option["name"] == "model_id"]
            assert model == [DEFAULT_MODEL], "the option chips offer the simulator's model"
            view = await user.watch()
            echo_id = await user.command("/imagine a fox --turbo")
            grid = await view.until(lambda: view.with_buttons(echo_id, "U1"), timeout=20)
            assert labels(grid)[0] == ["U1", "U2", "U3", "U4", "🔄"]
            assert len(grid["images"]) == 1

        status = await demo.stop(signal.SIGINT)
        assert status == 0, demo.errors()
        assert demo.printed[-1] == "genbot demo stopped"
        assert "Traceback" not in demo.errors()
    assert not exists(data_dir)
    assert contents(temp) == []


async def test_demo_on_every_address_needs_the_access_token(tmp_path: Path) -> None:
    async with genbot(
        "demo",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        env=clean_env(tmp=tmp_path),
        cwd=tmp_path,
        log=tmp_path / "demo.log",
    ) as demo:
        assert await demo.exit_status() == 1
        line = demo.error_line()
    assert "without [web] access_token" in line and "0.0.0.0" in line


async def test_demo_names_the_busy_port_instead_of_a_traceback(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        async with genbot(
            "demo",
            "--port",
            str(busy),
            env=clean_env(tmp=tmp_path),
            cwd=tmp_path,
            log=tmp_path / "demo.log",
        ) as demo:
            assert await demo.exit_status() == 1
            errors = demo.errors()
    assert f"cannot listen on 127.0.0.1:{busy} (Address already in use)" in errors
    assert "genbot demo --port N" in errors and "Traceback" not in errors
    assert contents(tmp_path) == [tmp_path / "demo.log"]


def test_the_demo_webhook_port_is_one_no_outgoing_connection_can_take() -> None:
    first_ephemeral = int(EPHEMERAL_PORTS.read_text().split()[0])
    if first_ephemeral <= FIRST_PICKED_PORT:
        pytest.skip("this machine gives outgoing connections every port from 20000 up")
    ports = {free_port() for _ in range(20)}

    assert all(FIRST_PICKED_PORT <= port < first_ephemeral for port in ports), ports
    for port in ports:
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", port))
