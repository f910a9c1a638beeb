"""The one error type of profiling: its message is one plain sentence naming the fault."""


class ProfilingError(ValueError):
    """Inputs that cannot be aggregated (missing, unreadable, nothing valid) or a profile set that cannot be stored."""


class NoPairError(ProfilingError):
    """No pair gave a profile; ``left_out`` keeps the job's verdict on each pair it saw, so callers need not parse the sentence."""

    def __init__(self, message: str, left_out: dict[tuple[str, str], str] | None = None) -> None:
        super().__init__(message)
        self.left_out = dict(left_out or {})
