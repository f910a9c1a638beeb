"""The one error type of the planner core: the service turns it into a 422."""


class PlanningError(ValueError):
    """A well-formed request that cannot be planned; the message is one plain sentence naming the fault."""
