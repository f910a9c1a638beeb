"""How long-running work says what it does: one ``Reporter`` protocol, a rich one for a terminal, a quiet one.

``status`` replaces the one live line (what happens now), ``log`` prints a line that stays, and
``progress`` moves a bar where there is one (seconds done of an estimated total).
"""
from __future__ import annotations

import logging
from typing import Any, Protocol

log = logging.getLogger(__name__)


class Reporter(Protocol):
    def status(self, text: str) -> None: ...

    def log(self, text: str) -> None: ...

    def progress(self, done_s: float, total_s: float) -> None: ...


class QuietReporter:
    """To the logging module: status at debug level, log lines at info; no bar."""

    def status(self, text: str) -> None:
        log.debug(text)

    def log(self, text: str) -> None:
        log.info(text)

    def progress(self, done_s: float, total_s: float) -> None:
        pass


class RichReporter:
    """The status as a ``rich.progress.Progress`` task's description, log lines printed above it.

    With a bar column in the progress, ``progress`` fills it (the time left is then estimated by rich).
    """

    def __init__(self, progress: Any, description: str = "starting") -> None:
        self.bar = progress
        self.task = progress.add_task(description, total=None)

    def status(self, text: str) -> None:
        self.bar.update(self.task, description=text)

    def log(self, text: str) -> None:
        self.bar.console.print(text, highlight=False, soft_wrap=True)

    def progress(self, done_s: float, total_s: float) -> None:
        self.bar.update(self.task, completed=done_s, total=max(total_s, done_s, 1.0))
