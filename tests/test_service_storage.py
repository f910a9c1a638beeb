"""planner.storage: plans and versioned profile sets in SQLite, shared by the service's threads, and its migration."""
from __future__ import annotations

import json
import os
import sqlite3
import stat
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from planner.model import Plan, ProfileSet, ProfileVersionRef
from planner.storage import (
    SCHEMA_VERSION,
    PutResult,
    Retention,
    RetentionResult,
    Storage,
    StorageError,
    VersionInUse,
)
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


def test_each_put_adds_a_version_and_the_newest_is_read(tmp_path):
    storage = Storage(tmp_path / "db.sqlite")
    first = ProfileSet.model_validate(small_profiles("b"))
    assert storage.put_profile_set(first) == PutResult(first.model_copy(update={"version": 1}), created=True)
    storage.put_profile_set(ProfileSet.model_validate(small_profiles("a")))
    changed = first.model_copy(update={"source": {"run": 2}})
    assert storage.put_profile_set(changed).profile_set.version == 2
    assert storage.profile_set_names() == ["a", "b"]
    assert storage.get_profile_set("b") == changed.model_copy(update={"version": 2})
    assert storage.get_profile_set("b", 1) == first.model_copy(update={"version": 1})
    assert storage.get_profile_set("b", 3) is None and storage.get_profile_set("c") is None
    assert [v.version for v in storage.profile_set_versions("b")] == [1, 2]


def test_a_put_equal_to_the_newest_version_adds_none(tmp_path):
    storage = Storage(tmp_path / "db.sqlite")
    body = small_profiles("same")
    storage.put_profile_set(ProfileSet.model_validate(body))
    reordered = {"source": body["source"], "entries": [dict(reversed(list(e.items()))) for e in body["entries"]], "name": "same"}
    again = storage.put_profile_set(ProfileSet.model_validate(reordered))
    assert again.created is False and again.profile_set.version == 1
    versions = storage.profile_set_versions("same")
    assert len(versions) == 1 and versions[0].digest.startswith("sha256:") and versions[0].entry_count == len(body["entries"])


def test_version_numbers_are_never_reused_after_a_delete(tmp_path):
    storage = Storage(tmp_path / "db.sqlite")
    for run in (1, 2):
        storage.put_profile_set(ProfileSet.model_validate({**small_profiles("n"), "source": {"run": run}}))
    assert storage.delete_profile_version("n", 2) is True
    assert storage.get_profile_set("n").version == 1
    assert storage.put_profile_set(ProfileSet.model_validate({**small_profiles("n"), "source": {"run": 3}})).profile_set.version == 3
    assert storage.delete_profile_version("n", 2) is False


def test_a_version_a_plan_names_cannot_be_deleted_until_the_plan_is(tmp_path):
    storage = Storage(tmp_path / "db.sqlite")
    storage.put_profile_set(ProfileSet.model_validate(small_profiles("used")))
    plan = storage.save_plan(_plan().model_copy(update={"profiles": ProfileVersionRef(name="used", version=1)}))
    assert storage.get_plan(plan.id).profiles == ProfileVersionRef(name="used", version=1)
    assert storage.profile_set_versions("used")[0].plans == 1
    with pytest.raises(VersionInUse, match=f"profile set 'used' version 1 is named by 1 stored plan \\({plan.id}\\): delete it first"):
        storage.delete_profile_version("used", 1)
    assert storage.delete_plan(plan.id) is True and storage.delete_plan(plan.id) is False
    assert storage.delete_profile_version("used", 1) is True
    assert storage.profile_set_names() == []


def test_retention_keeps_the_newest_versions_and_those_plans_name(tmp_path):
    path = tmp_path / "db.sqlite"
    storage = Storage(path)
    for run in range(1, 6):
        storage.put_profile_set(ProfileSet.model_validate({**small_profiles("r"), "source": {"run": run}}))
    storage.save_plan(_plan().model_copy(update={"profiles": ProfileVersionRef(name="r", version=2)}))
    storage.close()
    kept = Storage(path, Retention(keep_profile_versions=2))
    assert kept.apply_retention() == RetentionResult(plans=0, profile_versions=2)
    assert [v.version for v in kept.profile_set_versions("r")] == [2, 4, 5]
    kept.put_profile_set(ProfileSet.model_validate({**small_profiles("r"), "source": {"run": 6}}))
    assert [v.version for v in kept.profile_set_versions("r")] == [2, 5, 6]


def test_retention_deletes_plans_unused_for_the_given_days(tmp_path):
    path = tmp_path / "db.sqlite"
    storage = Storage(path)
    old, used, fresh = (storage.save_plan(_plan(name)) for name in ("old", "used", "fresh"))
    two_days_ago = time.time() - 2 * 86_400
    storage._execute("UPDATE plans SET created_at = ?, used_at = ? WHERE id IN (?, ?)", (two_days_ago, two_days_ago, old.id, used.id))
    assert storage.get_plan(used.id) is not None  # a read is a use
    storage.close()
    kept = Storage(path, Retention(keep_plans_days=1))
    assert kept.apply_retention().plans == 1
    assert kept.get_plan(old.id) is None and kept.get_plan(used.id) and kept.get_plan(fresh.id)


def _old_schema_database(path) -> tuple[str, dict]:
    """A database as the code before profile versions made it (schema 0): one row per set name, no versions."""
    plan = _plan().model_copy(update={"id": "0ld0ld"})
    body = small_profiles("legacy")
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE plans (id TEXT PRIMARY KEY, topology TEXT NOT NULL, strategy TEXT NOT NULL,
                            created_at REAL NOT NULL, body TEXT NOT NULL);
        CREATE TABLE profile_sets (name TEXT PRIMARY KEY, updated_at REAL NOT NULL, body TEXT NOT NULL);
    """)
    plan_json = plan.model_dump_json(exclude={"profiles"})
    db.execute("INSERT INTO plans VALUES (?, ?, ?, ?, ?)", (plan.id, plan.topology, plan.strategy, 1_700_000_000.0, plan_json))
    db.execute("INSERT INTO profile_sets VALUES (?, ?, ?)", ("legacy", 1_700_000_000.0, json.dumps(body)))
    db.commit()
    db.close()
    return plan_json, body


def test_a_database_of_the_schema_before_versions_opens_with_its_sets_as_version_1(tmp_path):
    path = tmp_path / "old.db"
    plan_json, body = _old_schema_database(path)
    storage = Storage(path)
    assert storage.profile_set_names() == ["legacy"]
    migrated = storage.get_profile_set("legacy")
    assert migrated.version == 1 and migrated == ProfileSet.model_validate({**body, "version": 1})
    versions = storage.profile_set_versions("legacy")
    assert [(v.version, v.created_at) for v in versions] == [(1, "2023-11-14T22:13:20.000Z")]
    assert storage.plan_json("0ld0ld") == plan_json and storage.get_plan("0ld0ld").profiles is None
    assert storage.put_profile_set(ProfileSet.model_validate(body)).created is False
    assert storage.put_profile_set(ProfileSet.model_validate({**body, "source": {}})).profile_set.version == 2
    storage.close()
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert [v.version for v in Storage(path).profile_set_versions("legacy")] == [1, 2]


def test_a_database_of_a_newer_schema_is_refused_naming_it(tmp_path):
    path = tmp_path / "new.db"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StorageError, match=f"has schema {SCHEMA_VERSION + 1}, newer than this hetsched reads"):
        Storage(path)


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
