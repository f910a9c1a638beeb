"""The generated reference pages (docs/reference/cli.md, configuration.md) are what the code gives today."""
from __future__ import annotations

from hetsched import reference


def test_the_committed_reference_pages_are_the_generated_ones():
    stale = reference.stale_pages()
    assert not stale, "stale, run `python -m hetsched.reference`:\n" + "\n".join(stale.values())


def test_every_plugin_key_is_on_the_configuration_page():
    page = reference.CONFIG_PAGE.read_text()
    keys = reference.plugin_keys()
    assert len(keys) >= 30
    for key in keys:
        assert f"`{key.key}`" in page


def test_every_command_is_on_the_command_line_page():
    import typer.main

    from hetsched.cli import _register, app

    _register()
    page = reference.CLI_PAGE.read_text()
    for path, _command in reference._commands(typer.main.get_command(app), []):
        assert f"## hetsched {' '.join(path)}\n" in page


def test_defaults_are_read_from_balanced_calls():
    source = 'String f = text(conf, FALLBACK, "even").toLowerCase(Locale.ROOT);\nint n = whole(conf, NODES, Math.max(1, t.n()));'
    assert reference._default(source, "FALLBACK") == "even"
    assert reference._default(source, "NODES") == "Math.max(1, t.n())"


def test_every_command_is_in_a_help_group():
    """`hetsched --help` groups commands by what they act on; a new command must say which group it belongs to."""
    from hetsched.cli import HELP_PANELS, _register, app

    _register()
    grouped = {command for commands in HELP_PANELS.values() for command in commands}
    names = {info.name for info in app.registered_commands} | {group.name for group in app.registered_groups}
    assert names - grouped == set(), "add these commands to hetsched.cli.HELP_PANELS"
