"""The one error type of profiling: its message is one plain sentence naming the fault."""


class ProfilingError(ValueError):
    """Inputs that cannot be aggregated (missing, unreadable, nothing valid) or a profile set that cannot be stored."""
