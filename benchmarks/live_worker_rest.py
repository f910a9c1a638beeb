"""Each worker's rest (its JVM's CPU outside every executor thread), % of its machine, per rate step of a live_vs_lab --rates run.

Live ``e`` charges only an executor's own thread and subprocess; were the rest to grow with the rate, that growth
would be per-tuple work the live profile misses (the lab's machine-wide ``e`` has it). Prints the median rest per
step and its least-squares slope against the spout's rate.

    .venv/bin/python benchmarks/live_worker_rest.py STORE_RECORDS_DIR TOPOLOGY RUN.json
"""
import json, glob, sys, statistics
from collections import defaultdict
recs=[json.loads(l) for f in glob.glob(sys.argv[1]+f"/topology={sys.argv[2]}/day=*/*.jsonl") for l in open(f)]
run=json.load(open(sys.argv[3]))["run"]
by=defaultdict(lambda: defaultdict(list))  # worker -> ts -> records
for r in recs: by[r["worker_id"]][round(r["ts"],1)].append(r)
print(f"{'worker':<16} {'machine':<9} " + " ".join(f"{s['rate']:>7g}/s" for s in run["steps"]) + "  slope %/(tuple/s)")
for w, series in sorted(by.items()):
    ts=sorted(series); m=series[ts[0]][0]["machine"]; cores=series[ts[0]][0]["machine_cores"]
    pts=[]
    for a,b in zip(ts,ts[1:]):
        ra={(r["task_id"]):r for r in series[a]}; rb={(r["task_id"]):r for r in series[b]}
        if set(ra)!=set(rb): continue
        dw=rb[next(iter(rb))]["worker_cpu_seconds"]-ra[next(iter(ra))]["worker_cpu_seconds"]
        dt_=(b-a)
        dth=sum(rb[t]["thread_cpu_seconds"]-ra[t]["thread_cpu_seconds"] for t in rb)
        rest=100*(dw-dth)/dt_/cores
        step=[s for s in run["steps"] if s["start"]<=a and b<=s["end"]]
        if step: pts.append((step[0]["rate"],rest))
    per={s["rate"]:[p for r,p in pts if r==s["rate"]] for s in run["steps"]}
    xs=[r for r,_ in pts]; ys=[p for _,p in pts]
    mx=statistics.mean(xs); my=statistics.mean(ys)
    slope=sum((x-mx)*(y-my) for x,y in pts)/sum((x-mx)**2 for x in xs)
    print(f"{w:<16} {m:<9} " + " ".join(f"{statistics.median(v):>9.2f}" if v else f"{'-':>9}" for v in per.values()) + f"  {slope:+.3f}")
