"""The one ``hetsched`` entry point; each subcommand group lives in its own module."""
from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Heterogeneity-aware scheduling for Apache Storm.")


def _register() -> None:
    # Each module adds its commands to ``app``; one line per area of the product.
    from hetsched import plan_cmd  # noqa: F401  planner core: hetsched plan
    from hetsched import serve_cmd  # noqa: F401  planning service: hetsched serve
    from hetsched import profiles_cmd  # noqa: F401  planning service: hetsched profiles put|get|list
    from hetsched import topology_cmd  # noqa: F401  topologies: hetsched submit|kill|topologies
    from hetsched import ops_cmd  # noqa: F401  operating a cluster: hetsched supervisors|placement
    from hetsched import profile_cmd  # noqa: F401  profiling: hetsched aggregate
    from hetsched import cluster_cmd  # noqa: F401  local cluster: hetsched cluster up|down|status|logs
    from hetsched import compose_cmd  # noqa: F401  compose deployment: hetsched cluster compose
    from hetsched import bench_cmd  # noqa: F401  end-to-end bench: hetsched bench, hetsched demo (the main job)


def main() -> None:
    _register()
    app()


if __name__ == "__main__":
    # Run as ``python -m hetsched.cli`` this file is ``__main__``, a second copy; the subcommands
    # register on the imported ``hetsched.cli.app``, so start that one.
    from hetsched.cli import main as _main

    _main()
