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

# With DATABASE_URL set (PostgreSQL) the data and chat tests run a second time on the
# embedded default, SQLite, so that both databases are covered in one run.
test: $(INSTALLED)
	$(BIN)/python -m pytest
	@if [ -n "$$DATABASE_URL" ]; then \
		echo "data and chat tests again on SQLite:"; \
		DATABASE_URL= $(BIN)/python -m pytest tests/data tests/chat; \
	fi

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

BENCHMARKS := engine providers tools

bench: $(INSTALLED)
	@for name in $(BENCHMARKS); do $(BIN)/python tests/benchmarks/$$name.py || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .pytest_cache .ruff_cache .hypothesis
