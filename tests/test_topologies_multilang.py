"""The components as Storm runs them: ``streamparse_run <class>`` started in the jar's extracted ``resources/``,
spoken to over Storm's multi-lang JSON protocol (the same messages a ShellBolt/ShellSpout sends)."""
from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import psutil
import pytest

from topologies import conf as keys
from topologies.jar import RESOURCES, build_jar
from topologies.submission import default_streamparse_run

END = "end"


class MultilangComponent:
    """One component process, started like Storm's ShellProcess does (cwd = the code dir)."""

    def __init__(self, code_dir: Path, class_path: str, storm_conf: dict, context: dict, pid_dir: Path):
        self.proc = subprocess.Popen(
            [str(default_streamparse_run()), class_path],
            cwd=code_dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.send({"conf": storm_conf, "context": context, "pidDir": str(pid_dir)})
        self.pid = self.read()["pid"]

    def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message) + f"\n{END}\n")
        self.proc.stdin.flush()

    def read(self) -> dict | list:
        lines = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"component exited: {self.proc.stderr.read()}")
            if line.rstrip("\n") == END:
                return json.loads("\n".join(lines))
            lines.append(line)

    def read_until(self, command: str) -> list[dict]:
        """Messages up to and including the first with this command (log messages skipped)."""
        seen = []
        while True:
            msg = self.read()
            if isinstance(msg, dict) and msg.get("command") == "log":
                continue
            seen.append(msg)
            if isinstance(msg, dict) and msg.get("command") == command:
                return seen

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


def context(component: str, targets: dict | None = None, tasks: int = 1) -> dict:
    task_map = {str(i + 1): component for i in range(tasks)}
    return {
        "task->component": task_map,
        "taskid": 1,
        "componentid": component,
        "stream->target->grouping": {"default": targets or {}},
        "streams": ["default"],
        "stream->outputfields": {"default": ["seq"]},
        "source->stream->grouping": {},
        "source->stream->fields": {},
    }


@pytest.fixture(scope="module")
def code_dir(tmp_path_factory) -> Path:
    """The jar's ``resources/`` extracted as a Storm supervisor does (prefix stripped)."""
    tmp = tmp_path_factory.mktemp("stormdist")
    jar = build_jar(tmp / "topology.jar")
    dest = tmp / "resources"
    with zipfile.ZipFile(jar) as zf:
        for name in zf.namelist():
            if name.startswith(f"{RESOURCES}/") and not name.endswith("/"):
                target = dest / name[len(RESOURCES) + 1:]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(name))
    return dest


@pytest.fixture
def start(code_dir, tmp_path):
    started: list[MultilangComponent] = []

    def start_component(class_path: str, storm_conf: dict, ctx: dict) -> MultilangComponent:
        component = MultilangComponent(code_dir, class_path, storm_conf, ctx, tmp_path)
        started.append(component)
        return component

    yield start_component
    for component in started:
        component.close()


def tuple_message(values, tuple_id: str = "t1", comp: str = "spout", stream: str = "default") -> dict:
    return {"id": tuple_id, "comp": comp, "stream": stream, "task": 1, "tuple": values}


def test_component_writes_its_pid_where_storm_looks(start, tmp_path):
    bolt = start("topologies.bolts.LowCompute", {}, context("low"))
    assert (tmp_path / str(bolt.pid)).exists()


def test_compute_bolt_spends_at_least_its_configured_cpu_and_passes_the_tuple_on(start):
    cpu_ms = 20.0
    bolt = start("topologies.bolts.MidCompute", {keys.cpu_ms_key("midCompute"): cpu_ms},
                 context("mid", targets={"high": {"type": "SHUFFLE"}}))
    process = psutil.Process(bolt.pid)
    before = sum(process.cpu_times()[:2])
    tuples = 10
    for i in range(tuples):
        bolt.send(tuple_message([i], tuple_id=f"t{i}"))
        emit, ack = bolt.read_until("ack")[-2:]
        assert emit == {"command": "emit", "tuple": [i], "anchors": [f"t{i}"], "need_task_ids": False}
        assert ack == {"command": "ack", "id": f"t{i}"}
    used_ms = (sum(process.cpu_times()[:2]) - before) * 1000
    # /proc counts CPU in clock ticks: each of the two readings may be short by up to one tick.
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    assert used_ms >= tuples * cpu_ms - 2 * tick_ms


def test_sink_acks_without_emitting(start):
    bolt = start("topologies.bolts.HighCompute", {keys.cpu_ms_key("highCompute"): 0}, context("high"))
    bolt.send(tuple_message([7]))
    assert bolt.read_until("ack") == [{"command": "ack", "id": "t1"}]


def test_spout_emits_one_reliable_tuple_per_next_under_flow_control(start):
    spout = start("topologies.spouts.NumberSpout", {}, context("spout", targets={"low": {"type": "SHUFFLE"}}))
    ids = []
    for _ in range(3):
        spout.send({"command": "next"})
        messages = spout.read_until("sync")
        emits = [m for m in messages if m.get("command") == "emit"]
        assert len(emits) == 1
        ids.append(emits[0]["id"])
    assert ids == [1, 2, 3]


def test_rolling_count_emits_window_counts_on_tick(start):
    bolt = start("topologies.bolts.RollingCount", {keys.WINDOW_LENGTH_S: 9, keys.EMIT_FREQUENCY_S: 3},
                 context("rolling_count", targets={"ranker": {"type": "SHUFFLE"}}))
    for i, word in enumerate(["ka", "lo", "ka"]):
        bolt.send(tuple_message([word], tuple_id=f"w{i}", comp="split"))
        bolt.read_until("ack")
    bolt.send({"id": "tick", "comp": "__system", "stream": "__tick", "task": -1, "tuple": [3]})
    emitted = {tuple(m["tuple"]) for m in bolt.read_until("ack") if m.get("command") == "emit"}
    assert emitted == {("ka", 2), ("lo", 1)}


def test_page_views_flow_through_view_to_uniquer(start):
    spout = start("topologies.spouts.PageViewSpout", {}, context("spout", targets={"view": {"type": "SHUFFLE"}}))
    view = start("topologies.bolts.PageViewBolt", {}, context("view", targets={"uniquer": {"type": "FIELDS"}}))
    uniquer = start("topologies.bolts.UniqueVisitors", {},
                    context("uniquer", targets={"report": {"type": "SHUFFLE"}}))
    urls = set()
    for i in range(5):
        spout.send({"command": "next"})
        line = next(m for m in spout.read_until("sync") if m.get("command") == "emit")["tuple"]
        view.send(tuple_message(line, tuple_id=f"v{i}"))
        url, user = next(m for m in view.read_until("ack") if m.get("command") == "emit")["tuple"]
        assert url.startswith("http://") and isinstance(user, int)
        urls.add(url)
        uniquer.send(tuple_message([url, user], tuple_id=f"u{i}", comp="view"))
        uniquer.read_until("ack")
    uniquer.send({"id": "tick", "comp": "__system", "stream": "__tick", "task": -1, "tuple": [3]})
    emitted = {m["tuple"][0] for m in uniquer.read_until("ack") if m.get("command") == "emit"}
    assert emitted == urls


def test_heartbeat_is_answered_with_sync(start):
    bolt = start("topologies.bolts.LowCompute", {}, context("low"))
    bolt.send({"id": "hb", "comp": "__system", "stream": "__heartbeat", "task": -1, "tuple": []})
    assert bolt.read_until("sync") == [{"command": "sync"}]
