"""``genbot demo``: one command serves the playground on the real core and the simulator, and
Ctrl-C stops it cleanly and deletes its data."""

from __future__ import annotations

import signal
import socket
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from yarl import URL

from genbot.demo import EPHEMERAL_PORTS, FIRST_PICKED_PORT, free_port
from simulator.diffusion import DEFAULT_MODEL
from tests.genbot.process import GenbotProcess, clean_env, genbot
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


def demo_process(
    tmp_path: Path, temp: Path, log: str, *args: str
) -> AbstractAsyncContextManager[GenbotProcess]:
    """``genbot demo *args`` on a free port, its temporary folder ``temp``."""
    return genbot(
        "demo",
        "--port",
        str(free_port()),
        *args,
        env=clean_env(tmp=temp),
        cwd=tmp_path,
        log=tmp_path / log,
    )


async def test_a_killed_demos_folder_is_deleted_at_the_next_start_and_no_other(
    tmp_path: Path,
) -> None:
    """qa D14: a ``kill -9`` left the demo's folder (database, images) behind for good."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    unowned = temp / "genbot-demo-unowned"
    unowned.mkdir()
    async with demo_process(tmp_path, temp, "first.log") as first:
        killed = Path((await first.line_matching(r"data in (\S+)")).group(1))
        assert await first.stop(signal.SIGKILL) == -signal.SIGKILL
    assert (killed / "genbot.db").is_file(), "a killed demo deletes nothing"

    async with demo_process(tmp_path, temp, "second.log") as second:
        await second.line_matching(URL_LINE)
        fresh = Path((await second.line_matching(r"data in (\S+)")).group(1))
        assert "genbot demo: deleted 1 data folder(s) of demos that ended" in second.printed
        assert not exists(killed)
        assert sorted(contents(temp)) == sorted([unowned, fresh])
        assert await second.stop(signal.SIGINT) == 0, second.errors()
    assert contents(temp) == [unowned], "a folder genbot did not claim is left alone"


async def test_a_demo_with_a_data_dir_keeps_its_data_and_identities_across_a_restart(
    tmp_path: Path,
) -> None:
    """qa D14: after a restart the open page reloaded with a new identity, its history gone;
    qa3 D2: the restarted simulator handed out the first run's task ids again, so a new job
    collided with the stored one's and hung in "Sending"."""
    temp, data = tmp_path / "tmp", tmp_path / "kept"
    temp.mkdir()
    async with demo_process(tmp_path, temp, "first.log", "--data-dir", str(data)) as first:
        url = (await first.line_matching(URL_LINE)).group(1)
        assert (await first.line_matching(r"data in (.+) \(kept\)$")).group(1) == str(data)
        async with playground_user(url) as user:
            before = await me(user)
            view = await user.watch()
            echo_id = await user.command("/imagine a fox --turbo")
            await view.until(lambda: view.with_buttons(echo_id, "U1"), timeout=20)
            cookies = {
                name: kept.value
                for name, kept in user.session.cookie_jar.filter_cookies(URL(url)).items()
            }
        assert await first.stop(signal.SIGINT) == 0, first.errors()
    assert (data / "genbot.db").is_file()

    async with demo_process(tmp_path, temp, "second.log", "--data-dir", str(data)) as second:
        url = (await second.line_matching(URL_LINE)).group(1)
        returning = PlaygroundUser(url)
        returning.session.cookie_jar.update_cookies(cookies, response_url=URL(url))
        try:
            assert await me(returning) == before, "the same identity, without loading the page"
            async with returning.session.get("/api/history") as response:
                shown = (await response.json())["messages"]
            assert [labels(m)[0][0] for m in shown if m["buttons"]][-1] == "U1", "the grid is there"
            view = await returning.watch()
            again_id = await returning.command("/imagine a fox again --turbo")
            await view.until(lambda: view.with_buttons(again_id, "U1"), timeout=20)
        finally:
            await returning.close()
        assert await second.stop(signal.SIGINT) == 0, second.errors()
    assert (data / "genbot.db").is_file()
    assert contents(temp) == [], "no temporary folder"


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
