"""Where Nimbus is: ``--nimbus``, else $HETSCHED_NIMBUS, else the local cluster's handle."""
from __future__ import annotations

import os

from topologies.errors import TopologyError
from topologies.nimbus import NimbusAddress, parse_address

NIMBUS_ENV = "HETSCHED_NIMBUS"


def nimbus_address(option: str | None = None) -> NimbusAddress:
    if option:
        return parse_address(option, "--nimbus")
    if os.environ.get(NIMBUS_ENV):
        return parse_address(os.environ[NIMBUS_ENV], f"${NIMBUS_ENV}")
    return _local_cluster_nimbus()


def _local_cluster_nimbus() -> NimbusAddress:
    try:
        import cluster
    except ImportError:
        raise TopologyError(
            f"no Nimbus address: give --nimbus host:port or set ${NIMBUS_ENV} (the local cluster package is not installed)"
        ) from None
    raise TopologyError(f"no Nimbus address: give --nimbus host:port or set ${NIMBUS_ENV}")
