"""What a multi-lang component learns about its place in the topology from Storm's handshake context."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def own_tasks(context: Mapping[str, Any]) -> list[int]:
    """Task ids of this component, in order."""
    me = context.get("componentid")
    return sorted(int(task) for task, component in context.get("task->component", {}).items() if component == me)


def task_index(context: Mapping[str, Any]) -> int:
    """0 for this component's first task, 1 for the next, ..."""
    tasks = own_tasks(context)
    task = int(context.get("taskid", 0))
    return tasks.index(task) if task in tasks else 0


def has_subscribers(context: Mapping[str, Any]) -> bool:
    """Whether any bolt subscribes to this component's output (if not, it is a sink)."""
    return any(bool(targets) for targets in context.get("stream->target->grouping", {}).values())
