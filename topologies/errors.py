"""The one error type of this package: a plain sentence that names the fault, shown to the user as it is."""


class TopologyError(Exception):
    """Something about a topology, its submission or the Storm cluster that the user must fix."""
