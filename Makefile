# Two commands do everything on a fresh machine: `make demo` (the main job) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup storm tools demo lint unit test clean

$(BIN)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -U pip 'setuptools<82' wheel
	$(BIN)/pip install -q -e '.[test]'
	touch $@

PLUGIN_JAR := storm-plugin/target/hetsched-storm-plugin.jar
PLUGIN_SRC := storm-plugin/pom.xml $(shell find storm-plugin/src/main -type f 2>/dev/null)

$(PLUGIN_JAR): $(PLUGIN_SRC)
	mvn -q -f storm-plugin/pom.xml -DskipTests package
	touch $@

# The project's Java benchmark components (CpuWorkBolt) for Java and Flux topologies: hetsched submit --jar/--flux.
JAVA_TOPOLOGIES_JAR := topologies/java/target/hetsched-java-topologies.jar
JAVA_TOPOLOGIES_SRC := topologies/java/pom.xml $(shell find topologies/java/src/main -type f 2>/dev/null)

$(JAVA_TOPOLOGIES_JAR): $(JAVA_TOPOLOGIES_SRC)
	mvn -q -f topologies/java/pom.xml -DskipTests package
	touch $@

# STORM_HOME: Apache Storm 2.8 assembled from Maven Central for the local cluster, and Flux's jars, cached in .cache/.
storm: $(BIN)/.installed
	$(BIN)/python -m cluster.storm_home

# docker-compose, docker.io and debootstrap (the compose cluster and its images; tests/test_compose_live.py), curl and jq
# (docs examples) and chromium (renders /ui in tests/test_ui.py) from Debian's packages, where missing.
tools:
	sh docker/install-tools.sh

setup: $(BIN)/.installed $(PLUGIN_JAR) $(JAVA_TOPOLOGIES_JAR) storm tools

demo: setup
	$(BIN)/hetsched demo

# ruff with its selected rules on all Python, mypy on every package ([tool.mypy] files in pyproject.toml).
lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/mypy

# The fast unit suite, as a bare `pytest` runs it: no live cluster, Docker, browser or long Spark job (-m "not live and not slow").
unit: $(BIN)/.installed
	$(BIN)/pytest

# Everything (CI runs this through .ci/run): lint, the Java tests, and every Python test, live and slow ones included (-m "").
test: setup lint
	mvn -q -f storm-plugin/pom.xml test
	mvn -q -f topologies/java/pom.xml test
	$(BIN)/pytest -m ""

clean:
	rm -rf $(VENV) .cache
