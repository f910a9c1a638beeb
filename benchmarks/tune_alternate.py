"""A tuned topology's starting placement against its plan, alternated: median and range of each (live).

``hetsched tune --json`` reports the placement the topology started on and the plan it ended on. One tune measures
each once, one after the other, on a shared and noisy host; this re-places the topology drained between the two,
``--repeats`` times each, alternating (start, plan, start, plan, ...), and measures the sink throughput of every
window, so the two are compared by their medians and ranges. It ends with the topology on the plan.

    .venv/bin/python -m benchmarks.tune_alternate REPORT.json --store var/live/records --planner http://127.0.0.1:8765
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})" if values else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="the JSON `hetsched tune --json` printed (the last JSON object in the file)")
    parser.add_argument("--store", type=Path, required=True, help="the planning service's records store")
    parser.add_argument("--planner", default=None, help="the planning service (default: the topology's hetsched.planner.url)")
    parser.add_argument("--token", default=None)
    parser.add_argument("--nimbus", default=None, help="Nimbus host:port (default: the local cluster's)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=45.0)
    parser.add_argument("--out", type=Path, default=None, help="write the windows and the summary as JSON here")
    args = parser.parse_args(argv)

    from hetsched.ops_cmd import planner_of
    from hetsched.replan import placement_of_plan
    from hetsched.replan_cmd import read_running
    from hetsched.tuning import Tuner, TuneSettings, rate_of
    from planner.client import PlannerClient

    try:
        text = args.report.read_text()
        report = json.loads(text[text.rindex("\n{") + 1:] if "\n{" in text else text)
    except (OSError, ValueError) as exc:
        print(f"error: {args.report} is not a `hetsched tune --json` report ({exc})", file=sys.stderr)
        return 1
    name = report.get("topology") if isinstance(report, dict) else None
    start = report.get("start") if isinstance(report, dict) else None
    plan_id = ((report.get("plan") or {}).get("id")) if isinstance(report, dict) else None
    if not name or not start or not plan_id:
        print(f"error: {args.report} has no starting placement and plan (a tune that planned, with --json)", file=sys.stderr)
        return 1
    state = read_running(args.nimbus, name, None)
    url, token = planner_of(state.address, state.conf, args.planner)
    rates: dict[str, list[float]] = {"start": [], "plan": []}
    windows = []
    with PlannerClient(url, args.token or token) as client:
        plan = client.get_plan(plan_id)
        settings = TuneSettings(store=args.store, set_name=(plan.profiles.name if plan.profiles else f"{name}-tuned"),
                                window_s=args.window, warmup_s=args.warmup, idle_s=0)
        tuner = Tuner(state, client, settings, lambda line: print(line, flush=True),
                      lambda: read_running(args.nimbus, name, None))
        tuner.start = {c: list(ms) for c, ms in start.items()}
        tuner.start_load_aware_off = False
        live = client.get_profile_set(settings.set_name)
        for i in range(args.repeats):
            for label in ("start", "plan"):
                if label == "start":
                    tuner.place(tuner.start, live, f"benchmarks.tune_alternate: the starting placement, repeat {i + 1}")
                else:
                    tuner.place(placement_of_plan(plan), None, f"benchmarks.tune_alternate: the plan, repeat {i + 1}",
                                plan=plan)
                tuner.wait(args.warmup, "warming up")
                t = tuner.measure(f"{label}, repeat {i + 1}")
                rates[label].append(rate_of(t))
                windows.append({"repeat": i + 1, "placement": label, "at": time.time(), **t.as_dict()})
    result = {"topology": name, "plan": plan_id, "predicted_sink": plan.sink_throughput, "windows": windows,
              "start": summary(rates["start"]), "plan_measured": summary(rates["plan"]),
              "ratio": summary([p / s for s, p in zip(rates["start"], rates["plan"]) if s > 0])}
    print(f"{name}: sink tuples/s, median (range) of {args.repeats}: start {result['start']}, plan "
          f"{result['plan_measured']} (predicted {plan.sink_throughput:.2f}); plan / start, pairwise: {result['ratio']}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
