"""The one error type of this package: a plain sentence that names the fault, shown to the user as it is.

A fault of a topology, of its submission or of the Storm cluster is one kind of error for the user,
so it is the Nimbus client's own (:class:`observe.nimbus.NimbusError`) under this package's name.
"""
from observe.nimbus import NimbusError as TopologyError

__all__ = ["TopologyError"]
