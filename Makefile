# The two quick-start commands are `make demo` and `make test`; both create .venv/ when missing.
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXTRAS ?= airflow,dev,langchain
export AIRFLOW__CORE__LOAD_EXAMPLES ?= False

.PHONY: install demo test lint typecheck unit bench airflow clean

# uv installs the ~150 packages in seconds where pip takes half a minute; pip is the fallback.
$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	@if $(PY) -m pip install -q uv 2>/dev/null; then \
	  $(BIN)/uv pip install -q --python $(PY) -e ".[$(EXTRAS)]"; \
	else $(PY) -m pip install -q -e ".[$(EXTRAS)]"; fi
	@touch $(STAMP)

install: $(STAMP)

# the demo's store stays in the git-ignored .retrieval_eval/: first run BASELINE, later NO REGRESSION
demo: install
	$(BIN)/retrieval-eval run handbook.demo handbook_bm25 --config examples/retrieval_eval.yaml \
	  --db sqlite:///.retrieval_eval/demo.sqlite

lint: install
	$(BIN)/ruff check retrieval_eval tests dags plugins benchmarks
	$(BIN)/ruff format --check retrieval_eval tests dags plugins benchmarks

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/pytest $(PYTEST_ARGS)

test: lint typecheck unit

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
