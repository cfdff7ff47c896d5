# chatomon developer commands. Every target sets itself up: a fresh machine needs only Python.
#   make test    create .venv if missing, install chatomon with its test tools, run the tests
#   make lint    ruff (lint + format check) and mypy, strict
#   make bench   the benchmarks under tests/benchmarks/ (tables on stdout, JSON in results/)

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# pip prints a warning per package for find-links folders this machine's pip.conf names
# but does not have; -q keeps set-up output to real problems.
PIP := $(BIN)/python -m pip -q --disable-pip-version-check
INSTALLED := $(VENV)/.installed

.PHONY: test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(INSTALLED): pyproject.toml | $(BIN)/python
	$(PIP) install --upgrade pip
	$(PIP) install -e ".[dev]"
	touch $@

test: $(INSTALLED)
	$(BIN)/python -m pytest

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

BENCHMARKS := engine providers

bench: $(INSTALLED)
	@for name in $(BENCHMARKS); do $(BIN)/python tests/benchmarks/$$name.py || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .pytest_cache .ruff_cache .hypothesis
