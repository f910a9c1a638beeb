"""The command line's one way to refuse: a red ``error:`` sentence on stderr and a non-zero exit."""
from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``error: <message>`` to stderr and return the exit to raise (``raise fail(...)``).

    The message is printed as written (escaped, so ``hetsched[bench]`` or a ``[default: x]`` stays literal),
    on one line however wide the terminal, so that scripts and tests can match the sentence.
    """
    Console(stderr=True).print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)
