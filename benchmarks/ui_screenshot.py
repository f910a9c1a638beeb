"""A screenshot of the planner's /ui page with Linear planned for the default local cluster.

Starts a real ``hetsched serve`` (temporary database unless ``--db``, a random token), stores the
profile set (default: profiles/default-cluster.json, measured on the local cluster), plans the
catalog's Linear topology on the default cluster spec's machines (capacity: 100 less each type's
base load, as the Nimbus plugin asks), then has headless Chromium render /ui and save a PNG.
With ``--nimbus`` the page also shows that cluster live (supervisors, topologies, executors).

    .venv/bin/python -m benchmarks.ui_screenshot [--out docs/images/ui.png] [--nimbus HOST:PORT]
        [--db var/hetsched.db] [--strategy fast] [--profiles profiles/default-cluster.json]
"""
from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
from pathlib import Path

from cluster.spec import load_spec
from planner.model import PlanRequest, ProfileRef, ProfileSet
from planner.profiles import machine_base_load
from tests.fixtures.browser import BrowserError, screenshot
from tests.fixtures.service import LiveService
from topologies.catalog import lookup, planner_topology

REPO = Path(__file__).resolve().parents[1]


def linear_request(profile_set: ProfileSet, strategy: str | None) -> PlanRequest:
    """Linear on the default local cluster, with the stored profile set by name."""
    return PlanRequest(
        topology=planner_topology(lookup("linear")),
        cluster=load_spec().planner_cluster(machine_base_load(profile_set)),
        profiles=ProfileRef(name=profile_set.name),
        strategy=strategy,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images" / "ui.png", help="PNG to write")
    parser.add_argument("--nimbus", help="host:port of a running cluster's Nimbus, shown live on the page")
    parser.add_argument("--db", type=Path, help="plan database to show (default: a temporary one)")
    parser.add_argument("--profiles", type=Path, default=REPO / "profiles" / "default-cluster.json")
    parser.add_argument("--strategy", help="planning strategy (default: the planner's)")
    args = parser.parse_args()

    try:
        profile_set = ProfileSet.model_validate_json(args.profiles.read_text())
    except (OSError, ValueError) as fault:
        print(f"error: cannot use the profile set {args.profiles}: {fault}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="hetsched-ui-") as tmp:
        service = LiveService(db_path=args.db or Path(tmp) / "hetsched.db", log_path=Path(tmp) / "serve.log",
                              token=secrets.token_urlsafe(24),
                              extra_args=["--nimbus", args.nimbus] if args.nimbus else [])
        service.start()
        try:
            with service.http() as http:
                stored = http.put(f"/v1/profiles/{profile_set.name}", content=profile_set.model_dump_json(by_alias=True),
                                  headers={"Content-Type": "application/json"})
                stored.raise_for_status()
                answer = http.post("/v1/plans", content=linear_request(profile_set, args.strategy).model_dump_json(by_alias=True, exclude_none=True),
                                   headers={"Content-Type": "application/json"})
                if answer.status_code != 201:
                    print(f"error: the planner refused the plan: {answer.text}", file=sys.stderr)
                    return 1
                plan = answer.json()
            png = screenshot(f"{service.url}/ui#token={service.token}", args.out)
        except BrowserError as fault:
            print(f"error: {fault}", file=sys.stderr)
            return 1
        finally:
            service.stop()
    print(f"plan {plan['id']}: {plan['topology']} by {plan['strategy']}, R = {plan['input_rate']:.2f} tuples/s, "
          f"instances {plan['instances']}")
    print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
