"""The one error type of the planner core: the service turns it into a 422."""


class PlanningError(ValueError):
    """A well-formed request that cannot be planned; the message is one plain sentence naming the fault."""


class PlanningTimeout(PlanningError):
    """The search ran past its time limit (``options.time_limit_s``) and stopped cleanly."""
