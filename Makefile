# Two commands: `make run` (explorer + local runner on the embedded sample) and `make test` (lint + whole suite).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint sample-store clean

$(STAMP): requirements.txt requirements-explorer.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

run: $(STAMP)
	$(PY) scripts/serve_local.py

lint: $(STAMP)
	$(PY) -m ruff check .

test: lint
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache artifacts
