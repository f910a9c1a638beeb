"""The one error type of the cluster package: a plain sentence for the operator."""
from __future__ import annotations


class ClusterError(Exception):
    """Something about the local cluster that the operator must fix or know.

    The message is one or a few plain sentences naming the fault; the command
    line prints it without a traceback.
    """
