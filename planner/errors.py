"""The one error type of the planner core: the service turns it into a 422."""
from __future__ import annotations

from typing import NamedTuple


class PlanningError(ValueError):
    """A well-formed request that cannot be planned; the message is one plain sentence naming the fault."""


class PlanningTimeout(PlanningError):
    """The search ran past its time limit (``options.time_limit_s``) and stopped cleanly."""


class MissingProfile(NamedTuple):
    """A (profile key, machine type) pair a request needs and its profiles lack, with the component that needs it."""

    component: str
    profile: str
    machine_type: str


class ProfilesMissing(PlanningError):
    """The profiles lack pairs the request needs: the topology's own fault, which no other tenant or retry changes.

    The service answers it with its own code (``profile_missing``) and every missing pair, so a caller (the
    Nimbus plugin) can tell it from a cluster that is too small or full, and say which pairs to profile.
    """

    def __init__(self, missing: list[MissingProfile]):
        self.missing = list(missing)
        first = self.missing[0]
        sentence = f"no profile for {first.profile} on machine type {first.machine_type} (component {first.component})"
        if len(self.missing) > 1:
            rest = ", ".join(f"({m.profile}, {m.machine_type})" for m in self.missing[1:])
            sentence += f"; missing too: {rest}"
        super().__init__(sentence)
