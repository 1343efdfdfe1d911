# Thin targets; each is one step. `make run` and `make test` are the README's two commands.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install run test lint typecheck check conformance clean

$(BIN)/perfdash: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	touch $@

install: $(BIN)/perfdash

run: install
	$(BIN)/perfdash serve

test: install
	bash .ci/ensure-services
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest -m "not gpu"

lint: install
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

conformance: install
	PATH=$(BIN):$$PATH $(PY) ../shared/tools/conformance.py

clean:
	rm -rf $(VENV) var test-artifacts .pytest_cache .mypy_cache .ruff_cache
