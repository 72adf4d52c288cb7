# Two commands: `make run` (explorer + local runner on the embedded sample) and `make test` (lint + whole suite).
# `make run` installs only what running needs (requirements.txt: explorer + runner); `make test` adds the test
# and lint tools (requirements-dev.txt: pytest, ruff, playwright, ray). pip shows its progress.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run test lint clean

$(PY):
	@echo "[make] creating the virtual environment $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip

$(RUN_STAMP): requirements.txt requirements-explorer.txt | $(PY)
	@echo "[make] installing what the explorer and the local runner need (first start: torch is the big one)"
	$(PY) -m pip install --progress-bar on -r requirements.txt
	$(PY) -m pip install --no-deps -e .
	touch $@

$(DEV_STAMP): $(RUN_STAMP) requirements-dev.txt
	@echo "[make] installing the test and lint tools"
	$(PY) -m pip install --progress-bar on -r requirements-dev.txt
	touch $@

run: $(RUN_STAMP)
	$(PY) scripts/serve_local.py

lint: $(DEV_STAMP)
	$(PY) -m ruff check .

test: lint
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache artifacts
