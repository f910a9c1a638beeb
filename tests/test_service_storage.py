"""planner.storage: plans and profile sets in SQLite, shared by the service's threads."""
from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor

import pytest

from planner.model import Plan, ProfileSet
from planner.storage import Storage, StorageError
from tests.fixtures.service import small_profiles


def _plan(topology: str = "linear") -> Plan:
    return Plan(topology=topology, strategy="paper", input_rate=2.0, total_throughput=6.0, sink_throughput=2.0,
                instances={"spout": 1}, assignments=[{"component": "spout", "index": 0, "machine": "m0",
                                                      "input_rate": 2.0, "cpu": 1.4}],
                machines=[{"id": "m0", "type": "slow", "utilization": 1.4, "instances": 1}], weighted_utilization=1.4)


def test_plans_get_an_id_and_read_back_equal(tmp_path):
    storage = Storage(tmp_path / "db.sqlite")
    stored = storage.save_plan(_plan())
    assert stored.id and len(stored.id) == 32
    assert storage.get_plan(stored.id) == stored
    assert storage.get_plan("no-such-id") is None


def test_profile_sets_are_created_replaced_and_listed(tmp_path):
    storage = Storage(tmp_path / "db.sqlite")
    first = ProfileSet.model_validate(small_profiles("b"))
    storage.put_profile_set(first)
    storage.put_profile_set(ProfileSet.model_validate(small_profiles("a")))
    replaced = first.model_copy(update={"source": {"run": 2}})
    storage.put_profile_set(replaced)
    assert storage.profile_set_names() == ["a", "b"]
    assert storage.get_profile_set("b") == replaced
    assert storage.get_profile_set("c") is None


def test_a_second_storage_on_the_same_file_sees_the_data(tmp_path):
    path = tmp_path / "nested" / "dir" / "db.sqlite"
    first = Storage(path)
    plan = first.save_plan(_plan())
    first.put_profile_set(ProfileSet.model_validate(small_profiles("x")))
    first.close()
    second = Storage(path)
    assert second.get_plan(plan.id) == plan
    assert second.profile_set_names() == ["x"]


def test_many_threads_write_and_read_at_once(tmp_path):
    storage = Storage(tmp_path / "db.sqlite")

    def work(i: int) -> bool:
        plan = storage.save_plan(_plan(f"t{i}"))
        storage.put_profile_set(ProfileSet.model_validate(small_profiles(f"set-{i:03d}")))
        return storage.get_plan(plan.id).topology == f"t{i}"

    with ThreadPoolExecutor(16) as pool:
        assert all(pool.map(work, range(200)))
    assert len(storage.profile_set_names()) == 200


def test_an_unusable_path_is_one_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StorageError, match="cannot open the plan database .*file/db.sqlite"):
        Storage(blocker / "db.sqlite")


def test_a_new_database_and_the_folder_made_for_it_are_private_whatever_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        storage = Storage(tmp_path / "made" / "db.sqlite")
        storage.put_profile_set(ProfileSet.model_validate(small_profiles("p")))
    finally:
        os.umask(old)
    files = sorted((tmp_path / "made").iterdir())
    assert [f.name for f in files] == ["db.sqlite", "db.sqlite-shm", "db.sqlite-wal"]
    assert {f.name: stat.S_IMODE(f.stat().st_mode) for f in files} == dict.fromkeys((f.name for f in files), 0o600)
    assert stat.S_IMODE((tmp_path / "made").stat().st_mode) == 0o700
    storage.close()


def test_an_existing_database_keeps_its_mode(tmp_path):
    existing = tmp_path / "db.sqlite"
    Storage(existing).close()
    existing.chmod(0o640)
    Storage(existing).close()
    assert stat.S_IMODE(existing.stat().st_mode) == 0o640
