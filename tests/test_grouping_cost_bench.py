"""benchmarks.grouping_cost --quick: the weighted groupings' cost, balance and moves come back whole and consistent
(shape and invariants only: the machine is too noisy for timed assertions)."""
from __future__ import annotations

import math
import shutil

import pytest

from benchmarks.grouping_cost import GROUPINGS, QUICK, TASK_COUNTS, main, spec
from topologies.inputs import TEXT_VOCABULARY_SIZE, TEXT_WORD_ZIPF_S, word


def test_the_keys_are_rolling_counts_words():
    job = spec(QUICK, [0.3, 0.3, 0.4])
    assert job["zipf_s"] == TEXT_WORD_ZIPF_S
    assert len(job["vocabulary"]) == TEXT_VOCABULARY_SIZE and job["vocabulary"][0] == word(1)
    assert [0.3, 0.3, 0.4] in [c["weights"] for c in job["balance"]["cases"]]


@pytest.mark.slow  # builds the plugin's test classes when they are stale, then a few seconds of Java
@pytest.mark.skipif(shutil.which("mvn") is None or shutil.which("java") is None,
                    reason="needs mvn and java (17) to build and run the Java harness")
def test_quick_run_has_every_figure_and_its_invariants(tmp_path):
    result = main(["--quick", "--json", str(tmp_path / "cost.json")])
    assert (tmp_path / "cost.json").is_file()

    assert {(r["grouping"], r["tasks"]) for r in result["cost"]} == {(g, n) for g, _ in GROUPINGS for n in TASK_COUNTS}
    for row in result["cost"]:
        assert len(row["cpu_ns"]) == QUICK["rounds"]
        assert all(math.isfinite(x) and x > 0 for x in row["cpu_ns"]), row
        assert row["min_ns"] <= row["median_ns"] <= row["max_ns"]

    assert len(result["balance"]) >= 3
    for case in result["balance"]:
        target = case["target"]
        assert sum(target) == pytest.approx(1)
        for kind in ("storm_fields", "weighted_fields"):
            got = case[kind]
            for share in ("tuple_share", "tuple_share_exact", "key_share", "uniform_key_share"):
                assert len(got[share]) == len(target)
                assert sum(got[share]) == pytest.approx(1, abs=1e-6), (case["name"], kind, share)
                assert all(0 <= x <= 1 for x in got[share])
        # Where keys are many and alike, weighted fields delivers each task its target.
        ours = case["weighted_fields"]
        assert all(abs(a - b) < 0.02 for a, b in zip(ours["uniform_key_share"], target)), case["name"]
        assert ours["tuple_share_max_dev"] >= case["deviation_floor"] - 1e-9

    for move in result["moves"]:
        for figure in ("least", "weighted_keys", "weighted_tuples", "weighted_uniform_keys", "storm_modulo_keys",
                       "storm_modulo_tuples", "weighted_modulo_keys", "weighted_modulo_tuples"):
            assert 0 <= move[figure] <= 1 + 1e-9, (move["name"], figure)
        assert move["weighted_uniform_keys"] >= move["least"] - 0.02, move["name"]
        if move["before"] is not None and move["before_tasks"] != len(move["after"]):
            # A task added or removed: rendezvous moves about the least, Storm's modulo most keys.
            assert move["weighted_uniform_keys"] < move["least"] + 0.03, move["name"]
            assert move["weighted_keys"] < move["storm_modulo_keys"], move["name"]
