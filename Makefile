# Two entry points for a fresh machine: `make demo` and `make test` (each installs first).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install browser demo test lint bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Headless Chromium for the report's browser test (tests/tracegrade/test_report_browser.py);
# installed from Debian when missing and root, otherwise that test skips with the reason.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
		|| echo "chromium not installed (needs root and apt-get): the browser test will skip"; }

demo: install
	$(BIN)/tracegrade demo

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

test: lint browser
	$(BIN)/python -m pytest

bench: install browser
	$(BIN)/python bench/bench_value.py
	$(BIN)/python bench/bench_novelty.py
	$(BIN)/python bench/bench_embedding.py
	$(BIN)/python bench/bench_memory.py
	$(BIN)/python bench/bench_confidence.py
	$(BIN)/python bench/bench_judge.py
	$(BIN)/python bench/bench_report.py

clean:
	rm -rf $(VENV) tracegrade-demo .pytest_cache .mypy_cache .ruff_cache
