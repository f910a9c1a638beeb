"""benchmarks.capacity_live without a cluster: the host's room, the request, the spec change, a bench.json's rates,
the gain over rounds, the alternation and the saved result, and the one-sentence refusals."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from benchmarks import capacity_live as live
from cluster.spec import DEFAULT_SPEC, load_spec
from planner.model import ProfileEntry


def _bench(input_rate: float | None = 30.0, status: str = "ok", scheduler: str = "planned",
           error: str | None = None) -> dict:
    """A bench.json as bench.report.result_dict writes it, cut to what the tool reads."""
    run: dict = {
        "topology": "linear", "scheduler": scheduler, "name": f"linear-{scheduler}", "status": status,
        "reason": None if status == "ok" else "the topology never handled a tuple",
        "plan_mismatches": [], "flow_imbalance": 0.01,
        "measured": None if input_rate is None else {
            "input_rate": input_rate, "spout_emit_rate": input_rate, "sink_throughput": input_rate * 0.99,
            "bolt_throughput": input_rate * 2, "total_throughput": input_rate * 3},
        "predicted": {"input_rate": 33.0, "spout_emit_rate": 33.0, "sink_throughput": 33.0, "bolt_throughput": 66.0,
                      "total_throughput": 99.0},
    }
    return {"complete": error is None, "error": error, "runs": [run], "settings": {"topologies": ["linear"]}}


def test_available_machines_fit_the_cores_left_on_the_host():
    spec = load_spec()
    assert live.available_machines(spec, 2.0, 0.2) == {"small": 2, "medium": 1, "large": 0}
    assert live.available_machines(spec, 4.0, 0.2) == {"small": 12, "medium": 6, "large": 3}
    sentence = live.host_sentence(spec, 2.0, 0.2, {"small": 2, "medium": 1, "large": 0})
    assert "0.40 cores left" in sentence and "2 small, 1 medium, 0 large" in sentence


@pytest.mark.parametrize("host, reserve", [(1.6, 0.2), (1.0, 0.0), (0.0, 0.2), (2.0, -1.0)])
def test_a_host_too_small_is_one_sentence(host, reserve):
    with pytest.raises(SystemExit) as exc:
        live.available_machines(load_spec(), host, reserve)
    assert isinstance(exc.value.code, str) and "\n" not in exc.value.code


def test_prices_parse_and_refuse_in_one_sentence():
    types = ["small", "medium", "large"]
    assert live.parse_prices("small=1, medium=2.5,large=4", types) == {"small": 1.0, "medium": 2.5, "large": 4.0}
    for bad, words in (("small:1,medium=2,large=4", "TYPE=PRICE"), ("small=x,medium=2,large=4", "TYPE=PRICE"),
                       ("small=-1,medium=2,large=4", "0 or more"), ("huge=1,small=1,medium=2,large=4", "huge"),
                       ("small=1,medium=2", "large")):
        with pytest.raises(SystemExit) as exc:
            live.parse_prices(bad, types)
        assert words in str(exc.value.code) and "\n" not in str(exc.value.code)


def test_the_request_owns_the_cluster_and_offers_each_type_as_far_as_it_fits():
    from topologies.catalog import lookup, planner_topology

    cluster = load_spec().planner_cluster({"small": 26.0})
    entries = [ProfileEntry(profile="x", machine_type="small", e=1.0, met=1.0, alpha=0.0)]
    request = live.build_request(planner_topology(lookup("linear")), cluster, {"small": 1, "medium": 2, "large": 4},
                                 {"small": 2, "medium": 1, "large": 0}, 20.0, entries)
    assert [m.id for m in request.owned] == ["small-1", "medium-1", "large-1"]
    offered = {t.name: (t.price, t.available, t.capacity) for t in request.machine_types}
    assert offered == {"small": (1, 2, 74.0), "medium": (2, 1, 100.0), "large": (4, 0, 100.0)}
    assert request.topologies[0].target_rate == 20.0
    with pytest.raises(SystemExit):
        live.build_request(planner_topology(lookup("linear")), cluster, {"small": 1, "medium": 2, "large": 4},
                           {"small": 2, "medium": 1, "large": 0}, 0.0, entries)


def test_the_spec_gets_one_more_machine_of_the_type_and_loads(tmp_path):
    data = yaml.safe_load(DEFAULT_SPEC.read_text())
    before = json.dumps(data)
    changed = live.spec_with_one_more(data, "medium")
    assert json.dumps(data) == before  # the default spec's data is left alone
    spec = live.write_spec(changed, tmp_path / "plus.yaml", "a note")
    assert spec.machine_type("medium").count == 2 and len(spec.machine_ids()) == 4
    assert spec.name == "default-plus-medium"
    assert (tmp_path / "plus.yaml").read_text().startswith("# a note\n")
    with pytest.raises(SystemExit):
        live.spec_with_one_more(data, "huge")


def test_rates_are_read_from_the_planned_run_of_linear():
    rates = live.run_rates(_bench(31.5))
    assert rates["status"] == "ok" and rates["input_rate"] == 31.5 and rates["predicted_input_rate"] == 33.0
    assert rates["sink_throughput"] == pytest.approx(31.5 * 0.99)
    assert live.run_rates(_bench(31.5, scheduler="default"))["status"] == "failed"
    failed = live.run_rates(_bench(None, status="failed"))
    assert failed == {"status": "failed", "error": "the topology never handled a tuple"}
    assert live.run_rates({"runs": [], "error": "Nimbus never came up"})["error"] == "Nimbus never came up"


def test_sides_alternate_round_by_round():
    assert [live.side_order(n) for n in (1, 2, 3)] == [("base", "added"), ("added", "base"), ("base", "added")]


def test_the_gain_is_the_median_of_the_rounds_both_sides_measured():
    benches = [
        {"round": 1, "side": "base", "status": "ok", "input_rate": 30.0},
        {"round": 1, "side": "added", "status": "ok", "input_rate": 39.0},
        {"round": 2, "side": "added", "status": "ok", "input_rate": 40.0},
        {"round": 2, "side": "base", "status": "failed", "error": "x"},
        {"round": 3, "side": "base", "status": "ok", "input_rate": 32.0},
        {"round": 3, "side": "added", "status": "ok", "input_rate": 40.0},
        {"round": 4, "side": "base", "status": "ok", "input_rate": 20.0},
        {"round": 4, "side": "added", "status": "ok", "input_rate": 22.0},
    ]
    gain = live.gain_summary(benches)
    assert gain["n"] == 3 and gain["left_out"] == [2]
    assert gain["median"] == pytest.approx(1.25) and gain["min"] == pytest.approx(1.1) and gain["max"] == pytest.approx(1.3)
    added = live.side_summary(benches, "added")
    assert added["runs"] == 4 and added["measured"]["median"] == pytest.approx(39.5)
    assert live.side_summary(benches, "base")["measured"]["n"] == 3
    assert live.gain_summary([])["median"] is None


def _head(tmp_path: Path) -> dict:
    return {"request": {"target_rate": 20.0, "available": {"small": 2, "medium": 1, "large": 0}},
            "add_next": [{"machine_type": "medium", "price": 2.0, "rate": 41.8, "gain": 0.44, "bottleneck": "medium-1"}],
            "added": {"machine_type": "medium", "machines": 4},
            "specs": {"base": str(DEFAULT_SPEC), "added": str(tmp_path / "spec-plus-medium.yaml")},
            "predicted": {"base": 32.9, "added": 41.8, "gain": 41.8 / 32.9}, "benches": []}


def test_rounds_alternate_record_failures_and_save_after_every_bench(tmp_path):
    data = _head(tmp_path)
    calls: list[tuple[str, str]] = []
    saved: list[int] = []

    def fake_bench(spec: Path, out: Path) -> dict:
        calls.append((spec.name, out.name))
        saved.append(len(json.loads((tmp_path / live.RESULT_FILE).read_text())["benches"])
                     if (tmp_path / live.RESULT_FILE).exists() else 0)
        if out.name == "base-2":
            return {"status": "failed", "error": "the bench exited with 1"}
        return {"status": "ok", "input_rate": 40.0 if out.name.startswith("added") else 32.0, "sink_throughput": 31.0}

    live.run_rounds(data, tmp_path, 3, bench=fake_bench)
    assert [o for _, o in calls] == ["base-1", "added-1", "added-2", "base-2", "base-3", "added-3"]
    assert saved == [0, 1, 2, 3, 4, 5]
    stored = json.loads((tmp_path / live.RESULT_FILE).read_text())
    assert len(stored["benches"]) == 6 and stored["gain"]["left_out"] == [2]
    assert stored["gain"]["median"] == pytest.approx(1.25)
    assert "1.250 (1.250-1.250) over 2 rounds" in live.gain_line(stored)


def test_run_bench_reads_the_bench_json_or_says_why_not(tmp_path, monkeypatch):
    def fake_run(command, **_):
        out = Path(command[command.index("--out") + 1])
        assert command[command.index("--cluster") + 1] == "compose"
        if out.name == "ok":
            out.mkdir()
            (out / "bench.json").write_text(json.dumps(_bench(35.0)))
            return subprocess.CompletedProcess(command, 0, "done\n", "")
        return subprocess.CompletedProcess(command, 1, "", "error: docker is not running\n")

    monkeypatch.setattr(live.subprocess, "run", fake_run)
    ok = live.run_bench(DEFAULT_SPEC, tmp_path / "ok")
    assert ok["status"] == "ok" and ok["input_rate"] == 35.0 and ok["exit_code"] == 0
    assert (tmp_path / "ok.log").read_text().startswith("$ ")
    failed = live.run_bench(DEFAULT_SPEC, tmp_path / "gone")
    assert failed["status"] == "failed" and "docker is not running" in failed["error"]


def test_report_reprints_a_saved_result_and_refuses_others(tmp_path, monkeypatch, capsys):
    data = _head(tmp_path)
    data["benches"] = [{"round": 1, "side": "base", "status": "ok", "input_rate": 30.0, "predicted_input_rate": 33.0},
                       {"round": 1, "side": "added", "status": "failed", "error": "gone"}]
    (tmp_path / live.RESULT_FILE).write_text(json.dumps(data))
    monkeypatch.setattr("sys.argv", ["capacity_live", "--report", str(tmp_path)])
    live.main()
    printed = capsys.readouterr().out
    assert "30.00 (30.00-30.00)" in printed and "rounds left out (a side failed): 1" in printed and "gone" in printed
    (tmp_path / "other.json").write_text("{}")
    monkeypatch.setattr("sys.argv", ["capacity_live", "--report", str(tmp_path / "other.json")])
    with pytest.raises(SystemExit) as exc:
        live.main()
    assert "not a result" in str(exc.value.code)


def test_repeats_below_one_is_one_sentence(monkeypatch):
    monkeypatch.setattr("sys.argv", ["capacity_live", "--repeats", "0", "--dry-run"])
    with pytest.raises(SystemExit) as exc:
        live.main()
    assert exc.value.code == "--repeats must be 1 or more"
