"""STORM_HOME for Apache Storm 2.8, assembled from Maven Central and cached.

There is no Storm tarball download on these machines, so the distribution's
layout is rebuilt from Maven artifacts:

- ``lib/``: ``storm-core`` and its runtime dependencies (Nimbus, Supervisor,
  DevZookeeper), without ``storm-clojure``, whose dependencies live only on
  Clojars;
- ``lib-worker/``: ``storm-client`` and its runtime dependencies, the class
  path supervisors give the workers they launch;
- ``lib-webapp/``: the Storm UI. ``storm-webapp`` is not published on Maven
  Central (no version is), so it stays empty unless the official
  distribution is used (``HETSCHED_STORM_HOME``);
- ``extlib/``, ``extlib-daemon/``, ``conf/storm.yaml``,
  ``log4j2/cluster.xml`` and ``log4j2/worker.xml`` (written here).

Flux (``flux-core`` and ``flux-wrappers``, for ``hetsched submit --flux``) is
kept beside it in ``.cache/flux-<version>/`` (:func:`ensure_flux`).

The official distribution (``org.apache.storm:final-package:<v>:tar.gz``) is
tried first. The result is cached under ``.cache/storm-<version>/``; a
second call returns at once. ``python -m cluster.storm_home`` does it from
the Makefile.
"""
from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from cluster.errors import ClusterError

log = logging.getLogger(__name__)

STORM_VERSION = "2.8.3"
"""The newest Storm 2.8 release Maven resolves from Central: 2.8.4's jars are there
but its parent POM (``org.apache.storm:storm:2.8.4``) is not, so its dependencies
cannot be resolved."""

DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
REPO_ROOT = Path(__file__).resolve().parents[1]
_COMPLETE = ".hetsched-complete"
_LAYOUT_VERSION = "1"


def cache_dir() -> Path:
    """Where assembled distributions are kept: ``HETSCHED_STORM_CACHE``, else ``.cache/`` of the source tree
    (git-ignored), else, for an installed package (``pip install .``: no source tree around it), the user's cache
    (``$XDG_CACHE_HOME/hetsched``, ``~/.cache/hetsched``), never the virtualenv's ``site-packages``."""
    if "HETSCHED_STORM_CACHE" in os.environ:
        return Path(os.environ["HETSCHED_STORM_CACHE"]).resolve()
    if (REPO_ROOT / "pyproject.toml").is_file():
        return (REPO_ROOT / ".cache").resolve()
    return (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hetsched").resolve()


def storm_home_path(version: str = STORM_VERSION) -> Path:
    """The STORM_HOME in use: ``HETSCHED_STORM_HOME`` if set, else the cached assembly."""
    override = os.environ.get("HETSCHED_STORM_HOME")
    if override:
        return Path(override).resolve()
    return cache_dir() / f"storm-{version}"


def has_ui(home: Path) -> bool:
    """True when the Storm UI (storm-webapp) is present in this STORM_HOME."""
    webapp = home / "lib-webapp"
    return webapp.is_dir() and any(webapp.glob("storm-webapp-*.jar"))


def require_tools() -> None:
    """Refuse plainly when Java or Maven is missing."""
    if shutil.which("java") is None:
        raise ClusterError("Java is not installed (no 'java' on PATH); Storm 2.8 needs Java 17: apt-get install openjdk-17-jdk-headless.")
    if shutil.which("mvn") is None:
        raise ClusterError("Maven is not installed (no 'mvn' on PATH); it assembles STORM_HOME from Maven Central: apt-get install maven.")


def ensure_storm_home(version: str = STORM_VERSION, *, quiet: bool = False) -> Path:
    """Return a complete STORM_HOME, assembling it from Maven Central on first use."""
    home = storm_home_path(version)
    if os.environ.get("HETSCHED_STORM_HOME"):
        if not (home / "lib").is_dir() or not (home / "lib-worker").is_dir():
            raise ClusterError(f"HETSCHED_STORM_HOME={home} is not a Storm distribution (it needs lib/ and lib-worker/).")
        return home
    if (home / _COMPLETE).is_file():
        return home
    require_tools()
    home.parent.mkdir(parents=True, exist_ok=True)
    with (home.parent / f".{home.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be assembling the same version right now
        if (home / _COMPLETE).is_file():
            return home
        return _assemble(version, home, quiet)


def _assemble(version: str, home: Path, quiet: bool) -> Path:
    work = home.with_name(home.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    maven_log = work / "maven.log"
    if not quiet:
        log.info("Assembling STORM_HOME %s from Maven Central (log: %s)", home, maven_log)
    if not _try_final_package(version, work, maven_log):
        _assemble_from_artifacts(version, work, maven_log)
    _write_config_files(work)
    _check_layout(work, version)
    (work / _COMPLETE).write_text(f"storm {version}, layout {_LAYOUT_VERSION}\n")
    shutil.rmtree(home, ignore_errors=True)
    work.rename(home)
    return home


def _maven(args: list[str], cwd: Path, maven_log: Path) -> bool:
    """Run Maven in batch mode, appending its output to ``maven_log``; True on success."""
    command = ["mvn", "-B", "-ntp"]
    repo_local = os.environ.get("HETSCHED_MAVEN_REPO_LOCAL")
    if repo_local:
        command.append(f"-Dmaven.repo.local={repo_local}")
    command += args
    with maven_log.open("a") as out:
        out.write(f"\n$ {' '.join(command)}\n")
        out.flush()
        done = subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, check=False)
    return done.returncode == 0


def _pom(artifact_id: str, dependencies: str) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>org.hetsched.stormhome</groupId>
  <artifactId>{artifact_id}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>{dependencies}
  </dependencies>
</project>
"""


def _dependency(artifact_id: str, version: str, exclusions: tuple[str, ...] = ()) -> str:
    excluded = "".join(
        f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"
        for g, a in (e.split(":") for e in exclusions)
    )
    return f"""
    <dependency>
      <groupId>org.apache.storm</groupId><artifactId>{artifact_id}</artifactId><version>{version}</version>
      <exclusions>{excluded}</exclusions>
    </dependency>"""


def _try_final_package(version: str, work: Path, maven_log: Path) -> bool:
    """Unpack the official distribution if Maven Central has it."""
    build = work / "build" / "final-package"
    build.mkdir(parents=True)
    (build / "pom.xml").write_text(_pom("final-package", ""))
    ok = _maven(
        [f"{DEPENDENCY_PLUGIN}:copy", f"-Dartifact=org.apache.storm:final-package:{version}:tar.gz",
         f"-DoutputDirectory={build}", "-Dmdep.useBaseVersion=true"],
        build, maven_log,
    )
    tarballs = list(build.glob("*.tar.gz"))
    if not ok or not tarballs:
        log.info("org.apache.storm:final-package:%s:tar.gz is not on Maven Central; assembling from artifacts", version)
        return False
    with tarfile.open(tarballs[0]) as tar:
        tar.extractall(build / "unpacked", filter="data")
    (top,) = (build / "unpacked").iterdir()
    for entry in top.iterdir():
        entry.rename(work / entry.name)
    shutil.rmtree(build)
    return True


def _assemble_from_artifacts(version: str, work: Path, maven_log: Path) -> None:
    parts = {
        "lib": _dependency("storm-core", version, exclusions=(
            "org.apache.storm:storm-clojure", "org.slf4j:slf4j-reload4j", "ch.qos.reload4j:reload4j")),
        "lib-worker": _dependency("storm-client", version),
    }
    for folder, dependency in parts.items():
        build = work / "build" / folder
        build.mkdir(parents=True)
        (build / "pom.xml").write_text(_pom(f"storm-home-{folder}", dependency))
        ok = _maven(
            [f"{DEPENDENCY_PLUGIN}:copy-dependencies", f"-DoutputDirectory={work / folder}",
             "-DincludeScope=runtime"],
            build, maven_log,
        )
        if not ok:
            tail = "\n".join(maven_log.read_text().splitlines()[-15:])
            raise ClusterError(
                f"Maven could not fetch Storm {version} ({folder}/) from Maven Central. Last lines of {maven_log}:\n{tail}"
            )
    for folder in ("lib-webapp", "extlib", "extlib-daemon", "public", "conf", "log4j2"):
        (work / folder).mkdir(exist_ok=True)
    shutil.rmtree(work / "build")


def _write_config_files(work: Path) -> None:
    conf = work / "conf" / "storm.yaml"
    if not conf.exists():
        conf.parent.mkdir(exist_ok=True)
        conf.write_text("# Each daemon of a hetsched cluster reads its own storm.yaml (-Dstorm.conf.file).\n")
    (work / "log4j2").mkdir(exist_ok=True)
    (work / "log4j2" / "cluster.xml").write_text(_CLUSTER_XML)
    (work / "log4j2" / "worker.xml").write_text(_WORKER_XML)


def _check_layout(work: Path, version: str) -> None:
    expected = [
        work / "lib" / f"storm-core-{version}.jar",
        work / "lib" / f"storm-server-{version}.jar",
        work / "lib-worker" / f"storm-client-{version}.jar",
    ]
    missing = [str(p.relative_to(work)) for p in expected if not p.is_file()]
    if missing:
        raise ClusterError(f"The assembled STORM_HOME misses {', '.join(missing)}; see {work / 'maven.log'}.")


_CLUSTER_XML = """<?xml version="1.0" encoding="UTF-8"?>
<!-- Daemon logging of a hetsched local cluster: one file per daemon under storm.log.dir. -->
<configuration monitorInterval="60" shutdownHook="disable">
  <properties>
    <property name="pattern">%d{yyyy-MM-dd HH:mm:ss.SSS} %c{1.} %t [%p] %msg%n</property>
  </properties>
  <appenders>
    <RollingFile name="A1" fileName="${sys:storm.log.dir}/${sys:logfile.name}"
                 filePattern="${sys:storm.log.dir}/${sys:logfile.name}.%i.gz">
      <PatternLayout charset="UTF-8"><pattern>${pattern}</pattern></PatternLayout>
      <Policies><SizeBasedTriggeringPolicy size="100 MB"/></Policies>
      <DefaultRolloverStrategy max="3"/>
    </RollingFile>
    <RollingFile name="METRICS" fileName="${sys:storm.log.dir}/${sys:logfile.name}.metrics"
                 filePattern="${sys:storm.log.dir}/${sys:logfile.name}.metrics.%i.gz">
      <PatternLayout><pattern>%d %-8r %m%n</pattern></PatternLayout>
      <Policies><SizeBasedTriggeringPolicy size="20 MB"/></Policies>
      <DefaultRolloverStrategy max="3"/>
    </RollingFile>
  </appenders>
  <loggers>
    <Logger name="org.apache.storm.metric.LoggingClusterMetricsConsumer" level="info" additivity="false">
      <appender-ref ref="METRICS"/>
    </Logger>
    <root level="info"><appender-ref ref="A1"/></root>
  </loggers>
</configuration>
"""

_WORKER_XML = """<?xml version="1.0" encoding="UTF-8"?>
<!-- Worker logging of a hetsched local cluster: files under the supervisor's workers-artifacts. -->
<configuration monitorInterval="60" shutdownHook="disable">
  <properties>
    <property name="dir">${sys:workers.artifacts}/${sys:storm.id}/${sys:worker.port}</property>
    <property name="pattern">%d{yyyy-MM-dd HH:mm:ss.SSS} %c{1.} %t [%p] %msg%n</property>
  </properties>
  <appenders>
    <RollingFile name="A1" fileName="${dir}/${sys:logfile.name}" filePattern="${dir}/${sys:logfile.name}.%i.gz">
      <PatternLayout charset="UTF-8"><pattern>${pattern}</pattern></PatternLayout>
      <Policies><SizeBasedTriggeringPolicy size="100 MB"/></Policies>
      <DefaultRolloverStrategy max="3"/>
    </RollingFile>
    <RollingFile name="STDOUT" fileName="${dir}/${sys:logfile.name}.out" filePattern="${dir}/${sys:logfile.name}.out.%i.gz">
      <PatternLayout><pattern>%msg%n</pattern></PatternLayout>
      <Policies><SizeBasedTriggeringPolicy size="100 MB"/></Policies>
      <DefaultRolloverStrategy max="2"/>
    </RollingFile>
    <RollingFile name="STDERR" fileName="${dir}/${sys:logfile.name}.err" filePattern="${dir}/${sys:logfile.name}.err.%i.gz">
      <PatternLayout><pattern>%msg%n</pattern></PatternLayout>
      <Policies><SizeBasedTriggeringPolicy size="100 MB"/></Policies>
      <DefaultRolloverStrategy max="2"/>
    </RollingFile>
    <RollingFile name="METRICS" fileName="${dir}/${sys:logfile.name}.metrics" filePattern="${dir}/${sys:logfile.name}.metrics.%i.gz">
      <PatternLayout><pattern>%d %-8r %m%n</pattern></PatternLayout>
      <Policies><SizeBasedTriggeringPolicy size="20 MB"/></Policies>
      <DefaultRolloverStrategy max="3"/>
    </RollingFile>
  </appenders>
  <loggers>
    <root level="info"><appender-ref ref="A1"/></root>
    <Logger name="org.apache.storm.metric.LoggingMetricsConsumer" level="info" additivity="false">
      <appender-ref ref="METRICS"/>
    </Logger>
    <Logger name="STDERR" level="INFO"><appender-ref ref="STDERR"/></Logger>
    <Logger name="STDOUT" level="INFO"><appender-ref ref="STDOUT"/></Logger>
  </loggers>
</configuration>
"""


FLUX_ARTIFACTS = ("flux-core", "flux-wrappers")
"""Flux's entry point (``org.apache.storm.flux.Flux``, with its YAML parser and commons-cli inside) and the
wrappers it links against; everything else it needs is Storm's client class path (``lib-worker/``)."""
FLUX_COPY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:2.10"
"""Flux's parent POM (``org.apache.storm:flux:<v>:pom``) is missing from Maven Central, so any resolver that reads
the jars' POMs (the dependency plugin 3.x, a project dependency) refuses them; this older ``copy`` goal fetches
each jar by its coordinates alone."""


def flux_dir(version: str = STORM_VERSION) -> Path:
    """Where Flux's jars are kept (git-ignored)."""
    return cache_dir() / f"flux-{version}"


def flux_jars(version: str = STORM_VERSION) -> list[Path]:
    return [flux_dir(version) / f"{artifact}-{version}.jar" for artifact in FLUX_ARTIFACTS]


def ensure_flux(version: str = STORM_VERSION) -> list[Path]:
    """Flux's jars from Maven Central, fetched on first use and cached."""
    jars = flux_jars(version)
    if all(jar.is_file() for jar in jars):
        return jars
    require_tools()
    folder = flux_dir(version)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f".{folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if all(jar.is_file() for jar in jars):
            return jars
        work = folder.with_name(folder.name + ".partial")
        shutil.rmtree(work, ignore_errors=True)
        (work / "build").mkdir(parents=True)
        (work / "build" / "pom.xml").write_text(_pom("flux", ""))
        maven_log = work / "maven.log"
        for artifact in FLUX_ARTIFACTS:
            ok = _maven([f"{FLUX_COPY_PLUGIN}:copy", f"-Dartifact=org.apache.storm:{artifact}:{version}:jar",
                         f"-DoutputDirectory={work}"], work / "build", maven_log)
            if not ok or not (work / f"{artifact}-{version}.jar").is_file():
                tail = "\n".join(maven_log.read_text().splitlines()[-15:])
                raise ClusterError(f"Maven could not fetch org.apache.storm:{artifact}:{version} from Maven Central. "
                                   f"Last lines of {maven_log}:\n{tail}")
        shutil.rmtree(work / "build")
        shutil.rmtree(folder, ignore_errors=True)
        work.rename(folder)
    return jars


def main() -> int:
    """Command-line entry for the Makefile: assemble (or find) STORM_HOME and Flux, and print STORM_HOME's path."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        home = ensure_storm_home()
        ensure_flux()
    except ClusterError as fault:
        print(f"error: {fault}", file=sys.stderr)
        return 1
    print(home)
    return 0


if __name__ == "__main__":
    sys.exit(main())
