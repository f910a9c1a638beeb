# Two commands do everything on a fresh machine: `make demo` (the main job) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test clean

$(BIN)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -U pip 'setuptools<82' wheel
	$(BIN)/pip install -q -e '.[test]'
	touch $@

setup: $(BIN)/.installed

demo: setup
	$(BIN)/hetsched demo

test: setup
	$(BIN)/pytest

clean:
	rm -rf $(VENV) .cache
