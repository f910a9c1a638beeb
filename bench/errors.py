"""The one error type of the bench: a plain sentence naming the fault."""


class BenchError(RuntimeError):
    """The bench cannot go on, or one run failed; the message says why."""
