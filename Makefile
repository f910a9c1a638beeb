# Two commands do everything on a fresh machine: `make demo` (the main job) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup storm demo test clean

$(BIN)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -U pip 'setuptools<82' wheel
	$(BIN)/pip install -q -e '.[test]'
	touch $@

# STORM_HOME: Apache Storm 2.8 assembled from Maven Central for the local cluster, cached in .cache/.
storm: $(BIN)/.installed
	$(BIN)/python -m cluster.storm_home

setup: $(BIN)/.installed storm

demo: setup
	$(BIN)/hetsched demo

test: setup
	$(BIN)/pytest

clean:
	rm -rf $(VENV) .cache
