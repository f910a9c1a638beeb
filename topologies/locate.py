"""Where Nimbus is: ``--nimbus``, else $HETSCHED_NIMBUS, else the local cluster's handle."""
from __future__ import annotations

import os

from topologies.errors import TopologyError
from observe.nimbus import NimbusAddress, parse_address

NIMBUS_ENV = "HETSCHED_NIMBUS"


def nimbus_address(option: str | None = None) -> NimbusAddress:
    if option:
        return parse_address(option, "--nimbus")
    if os.environ.get(NIMBUS_ENV):
        return parse_address(os.environ[NIMBUS_ENV], f"${NIMBUS_ENV}")
    return _local_cluster_nimbus()


def _local_cluster_nimbus() -> NimbusAddress:
    """Nimbus of the local cluster in $HETSCHED_CLUSTER_HOME (or the default home), if it runs."""
    try:
        from cluster import running_cluster
        from cluster.errors import ClusterError
        from cluster.local import LocalCluster
    except ImportError:
        raise TopologyError(
            f"no Nimbus address: give --nimbus host:port or set ${NIMBUS_ENV} (the local cluster package is not installed)"
        ) from None
    try:
        local = running_cluster()
        if local is None:
            layout = LocalCluster().layout
            raise TopologyError(
                f"the local cluster at {layout.home} is not running (its Nimbus would be "
                f"{layout.nimbus_host}:{layout.nimbus_port}); start it with `hetsched cluster up`, or give --nimbus host:port"
            )
    except ClusterError as exc:
        raise TopologyError(f"no Nimbus address: give --nimbus host:port or set ${NIMBUS_ENV} ({exc})") from None
    return local.nimbus_address  # with the standby Nimbus as a seed, where the cluster has one
