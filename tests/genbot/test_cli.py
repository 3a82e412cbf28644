"""``genbot --help`` lists every command with its whole one-line description."""

from __future__ import annotations

from click.testing import CliRunner

from genbot.cli import main


def test_help_lists_each_command_with_its_whole_description() -> None:
    result = CliRunner().invoke(main, ["--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    listed = result.output.split("Commands:", 1)[1].strip().splitlines()
    assert [line.split()[0] for line in listed] == ["demo", "doctor", "run", "sim", "status"]
    assert not [line for line in listed if line.rstrip().endswith("...")], listed
    for line, command in zip(listed, sorted(main.commands), strict=True):
        described = main.commands[command].get_short_help_str(limit=1000)
        assert line.split(None, 1)[1].strip() == described
