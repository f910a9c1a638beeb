"""``hetsched cluster compose``: write (or check) docker-compose.yml and its storm.yaml files from a cluster spec."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from hetsched.cluster_cmd import SpecOption
from hetsched.errors import fail

console = Console()


def compose(
    spec: Optional[Path] = SpecOption,
    out: Optional[Path] = typer.Option(None, "--out", help="Folder to write into (default: the repository root)."),
    check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 if the files differ from what the spec gives."),
    new_token: bool = typer.Option(False, "--new-token", help="Also write new random planner tokens into docker/secrets/ (mode 0600): Nimbus's (read, plan, bind), the workers' (records), the operator's (every scope) and the planner's file of all three."),
) -> None:
    """The same machines as the local cluster, as a docker-compose deployment (ZooKeeper, Nimbus with the plugin, UI, planner, supervisors)."""
    from cluster import compose as deployment
    from cluster.errors import ClusterError
    from cluster.spec import DEFAULT_SPEC, load_spec

    spec_path = spec or DEFAULT_SPEC
    out_dir = (out or deployment.REPO_ROOT).resolve()
    try:
        cluster_spec = load_spec(spec_path)
        if check:
            stale = deployment.stale_files(cluster_spec, spec_path, out_dir)
            for path in stale:
                Console(stderr=True).print(f"[red]out of date:[/red] {path}", highlight=False)
            if stale:
                Console(stderr=True).print(f"Run: hetsched cluster compose --spec {spec_path}", highlight=False)
                raise typer.Exit(1)
            console.print(f"The compose deployment under {out_dir} matches {spec_path}.", highlight=False)
            return
        written = deployment.write(cluster_spec, spec_path, out_dir)
        left = deployment.write_token_files(out_dir) if new_token else []
    except ClusterError as fault:
        raise fail(str(fault)) from None
    for path in written:
        console.print(f"wrote {path}", highlight=False)
    if new_token:
        console.print(f"wrote new planner tokens into {out_dir / deployment.SECRETS_FOLDER} (mode 0600); yours, "
                      f"with every scope, is {deployment.OPERATOR_TOKEN_FILE}", highlight=False)
    for sentence in left:
        Console(stderr=True).print(f"[yellow]to do:[/yellow] {sentence}", highlight=False, soft_wrap=True)
