"""The images of the compose cluster, built here from Debian, Maven Central and PyPI only (no registry).

- ``hetsched-base:bookworm``: a minimal Debian bookworm with OpenJDK 17, Python 3 and procps, made
  with debootstrap and ``docker import`` (docker/build-base.sh);
- ``hetsched-storm:2.8.3``: the STORM_HOME that :mod:`cluster.storm_home` assembles from Maven
  Central, the plugin jar in ``extlib-daemon/`` (Nimbus's scheduler) and ``extlib/`` (the workers'
  metrics hook), a virtualenv with streamparse for the Python bolts (docker/storm.Dockerfile).
  ZooKeeper runs from it too;
- ``hetsched-planner``: the core install of hetsched (docker/planner.Dockerfile).

Python packages reach the images as wheels built on this host (``pip wheel``, pinned to the versions
of the running virtualenv), so no build step needs the network. Each image carries a label with a
digest of what went into it; an image whose digest matches is not built again, so a second
``hetsched cluster up --compose`` builds nothing. Builds run under ``nice -n 19 ionice -c3``.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cluster.compose import BASE_IMAGE, PLANNER_IMAGE, PLUGIN_JAR_NAME, STORM_IMAGE
from cluster.errors import ClusterError
from cluster.storm_config import PLUGIN_JAR
from cluster.storm_home import STORM_VERSION, ensure_storm_home

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[1]
DOCKER_FOLDER = REPO_ROOT / "docker"
INPUTS_LABEL = "org.hetsched.inputs"
"""Label holding the digest of an image's inputs."""
STREAMPARSE_PINS = ("streamparse==5.0.1", "setuptools<82")
"""The topologies extra of pyproject.toml: what the workers' Python processes need."""
PLANNER_SOURCES = ("pyproject.toml", "README.md", "planner", "hetsched", "cluster", "topologies", "spark_profiling",
                   "bench", "observe")
"""What ``pip wheel`` needs to build the hetsched wheel (the packages of pyproject.toml)."""
STORM_HOME_PARTS = ("lib", "lib-worker", "lib-webapp", "extlib", "extlib-daemon", "conf", "log4j2", "public")
"""What of STORM_HOME goes into the image: the distribution, not what daemons of a local cluster left there
(Nimbus's metrics store ``storm_rocks/`` defaults to a folder of STORM_HOME)."""
NICE = ["nice", "-n", "19", "ionice", "-c3"]
BUILD_TIMEOUT_S = 1800

Report = Callable[[str], None]


def build_folder() -> Path:
    """Build contexts and wheelhouses (git-ignored; ``HETSCHED_COMPOSE_BUILD`` to put them elsewhere)."""
    return Path(os.environ.get("HETSCHED_COMPOSE_BUILD", REPO_ROOT / "var" / "compose-build")).resolve()


@dataclass(frozen=True)
class BuiltImage:
    name: str
    built: bool
    """False where an image with the same inputs was there already."""
    seconds: float


def ensure_images(report: Report = log.info, force: bool = False) -> list[BuiltImage]:
    """Build every image that is missing or whose inputs changed; base, then Storm and planner."""
    import time

    require_docker(report)
    done = []
    for name, make in ((BASE_IMAGE, _base), (STORM_IMAGE, _storm), (PLANNER_IMAGE, _planner)):
        started = time.monotonic()
        built = make(report, force)
        done.append(BuiltImage(name, built, round(time.monotonic() - started, 1)))
    return done


def image_digest(name: str) -> str | None:
    """The inputs digest an image was built with; None where it is missing."""
    done = subprocess.run(["docker", "image", "inspect", "--format", "{{json .Config.Labels}}", name],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    labels = json.loads(done.stdout.strip() or "null") or {}
    return labels.get(INPUTS_LABEL, "")


def _base(report: Report, force: bool) -> bool:
    script = DOCKER_FOLDER / "build-base.sh"
    digest = _digest([script.read_bytes()])
    current = image_digest(BASE_IMAGE)
    if not force and current == digest:
        return False
    if not force and current is not None and not _can_debootstrap():
        report(f"using the {BASE_IMAGE} found (made elsewhere; no debootstrap as root here to make it again)")
        return False
    if not _can_debootstrap():
        raise ClusterError(f"No {BASE_IMAGE} image, and it cannot be made here: docker/build-base.sh needs root and debootstrap "
                           "(apt-get install debootstrap); or build it from a Debian image (docs/quickstart/compose.md).")
    report(f"building {BASE_IMAGE} with debootstrap (Debian bookworm, OpenJDK 17, Python 3); about 2 minutes")
    _run(["sh", str(script), BASE_IMAGE, "", digest], "docker/build-base.sh")
    return True


def _storm(report: Report, force: bool) -> bool:
    if not PLUGIN_JAR.is_file():
        raise ClusterError(f"The plugin jar {PLUGIN_JAR} is not built: mvn -q -f storm-plugin/pom.xml -DskipTests package.")
    storm_home = ensure_storm_home()
    context = build_folder() / "storm"
    wheels = _wheelhouse(context / "wheels", list(STREAMPARSE_PINS), report)
    dockerfile = DOCKER_FOLDER / "storm.Dockerfile"
    parts = [storm_home / part for part in STORM_HOME_PARTS if (storm_home / part).is_dir()]
    digest = _digest([dockerfile.read_bytes(), (image_digest(BASE_IMAGE) or "").encode(), STORM_VERSION.encode(),
                      *[part.name.encode() + _tree_listing(part) for part in parts], PLUGIN_JAR.read_bytes(),
                      _tree_listing(wheels)])
    if not force and image_digest(STORM_IMAGE) == digest:
        return False
    report(f"building {STORM_IMAGE} (Storm {STORM_VERSION} from {storm_home}, the plugin jar, streamparse)")
    shutil.rmtree(context / "storm-home", ignore_errors=True)
    for part in parts:
        _link_tree(part, context / "storm-home" / part.name)
    shutil.copy2(PLUGIN_JAR, context / PLUGIN_JAR_NAME)
    _docker_build(STORM_IMAGE, dockerfile, context, digest)
    return True


def _planner(report: Report, force: bool) -> bool:
    context = build_folder() / "planner"
    sources = _digest([_tree_listing(REPO_ROOT / name, contents=True) for name in PLANNER_SOURCES])
    dockerfile = DOCKER_FOLDER / "planner.Dockerfile"
    digest = _digest([dockerfile.read_bytes(), (image_digest(BASE_IMAGE) or "").encode(), sources.encode()])
    if not force and image_digest(PLANNER_IMAGE) == digest:
        return False
    report(f"building {PLANNER_IMAGE} (hetsched's core install from this checkout)")
    source_copy = context / "src"
    shutil.rmtree(source_copy, ignore_errors=True)
    source_copy.mkdir(parents=True)
    for name in PLANNER_SOURCES:
        path = REPO_ROOT / name
        if path.is_dir():
            shutil.copytree(path, source_copy / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, source_copy / name)
    wheels = context / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    _wheelhouse(wheels, [str(source_copy)], report, marker=False)
    shutil.rmtree(source_copy)
    _docker_build(PLANNER_IMAGE, dockerfile, context, digest)
    return True


def _can_debootstrap() -> bool:
    return os.geteuid() == 0 and (shutil.which("debootstrap") is not None or Path("/usr/sbin/debootstrap").is_file())


def _wheelhouse(folder: Path, requirements: list[str], report: Report, marker: bool = True) -> Path:
    """Wheels of ``requirements`` and their dependencies at the running virtualenv's versions (kept once built)."""
    done_marker = folder / ".complete"
    if marker and done_marker.is_file() and done_marker.read_text() == "\n".join(requirements):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    report(f"building wheels for {', '.join(Path(r).name for r in requirements)} (pip wheel)")
    constraints = folder.parent / "constraints.txt"
    frozen = subprocess.run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"],
                            capture_output=True, text=True, check=False)
    pins = [line for line in frozen.stdout.splitlines() if "==" in line and not line.startswith("hetsched")]
    constraints.write_text("\n".join(pins) + "\n")
    _run([*NICE, sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "-w", str(folder),
          "-c", str(constraints), *requirements], "pip wheel")
    if marker:
        done_marker.write_text("\n".join(requirements))
    return folder


def _docker_build(image: str, dockerfile: Path, context: Path, digest: str) -> None:
    (context / ".dockerignore").write_text(".complete\n")
    _run([*NICE, "docker", "build", "-q", "--build-arg", f"BASE_IMAGE={BASE_IMAGE}", "--label", f"{INPUTS_LABEL}={digest}",
          "-t", image, "-f", str(dockerfile), str(context)], f"docker build of {image}",
         env={**os.environ, "DOCKER_BUILDKIT": "0"})


def _link_tree(source: Path, target: Path) -> None:
    """A copy of ``source`` at ``target``, hard-linked where the file system allows (STORM_HOME is 200 MB)."""
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copytree(source, target, copy_function=os.link)
    except OSError:
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target)


def _tree_listing(path: Path, contents: bool = False) -> bytes:
    """Names and sizes (``contents``: and bytes) of every file under ``path``: what an image depends on."""
    if path.is_file():
        return path.name.encode() + (path.read_bytes() if contents else str(path.stat().st_size).encode())
    parts = []
    for file in sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.name != ".complete"):
        parts.append(str(file.relative_to(path)).encode())
        parts.append(hashlib.sha256(file.read_bytes()).digest() if contents else str(file.stat().st_size).encode())
    return b"\0".join(parts)


def _digest(parts: list[bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:24]


def require_docker(report: Report = log.info) -> None:
    """A Docker engine that answers: where none does, start one as docker/start-dockerd.sh does (root, no service manager)."""
    if shutil.which("docker") is None:
        raise ClusterError("Docker is not installed (no 'docker' on PATH): apt-get install docker.io, or make setup.")
    if _engine_answers():
        return
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        raise ClusterError("No Docker engine answers; start one: sh docker/start-dockerd.sh (as root), or systemctl start docker.")
    report("no Docker engine answers: starting one (docker/start-dockerd.sh: dockerd --iptables=false)")
    done = subprocess.run(["sh", str(DOCKER_FOLDER / "start-dockerd.sh")], capture_output=True, text=True, check=False)
    if done.returncode != 0 or not _engine_answers():
        raise ClusterError(f"Could not start a Docker engine: {(done.stderr or done.stdout).strip()}")


def _engine_answers() -> bool:
    done = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, check=False)
    return done.returncode == 0


def _run(command: list[str], what: str, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env, timeout=BUILD_TIMEOUT_S)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
        raise ClusterError(f"{what} failed (exit {done.returncode}):\n{tail}")
