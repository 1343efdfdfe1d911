# Thin targets; each is one step. `make run` and `make test` are the README's two commands.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install run test lint typecheck check conformance perf clean
# torch only for the benchmark runner's tests: this exact CPU build is on the CI disk.
TORCH_CPU ?= torch==2.13.0

$(BIN)/perfdash: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	touch $@

install: $(BIN)/perfdash

$(VENV)/.torch-installed: $(BIN)/perfdash
	$(BIN)/pip install -q "$(TORCH_CPU)"
	touch $@

run: install
	$(BIN)/perfdash serve

test: install $(VENV)/.torch-installed
	bash .ci/ensure-services
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest -m "not gpu" --durations=15

lint: install
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

conformance: install
	PATH=$(BIN):$$PATH $(PY) ../shared/tools/conformance.py

perf: install
	for b in perf/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) var test-artifacts .pytest_cache .mypy_cache .ruff_cache
