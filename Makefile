# The two quick-start commands are `make demo` and `make test`; both create .venv/ when missing.
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the vector-store extras are what their adapters' tests run on (tests/retrievers/test_qdrant.py, ...)
EXTRAS ?= airflow,dev,docs,langchain,qdrant,chroma,lancedb,llamaindex,haystack
export AIRFLOW__CORE__LOAD_EXAMPLES ?= False

.PHONY: install demo test lint typecheck docs unit bench airflow clean

# uv installs the ~150 packages in seconds where pip takes half a minute; pip is the fallback.
# Bytecode is compiled at install, for every package in the venv: with PYTHONDONTWRITEBYTECODE=1
# (set here and in many containers) nothing is cached later, and every process (each Airflow
# task) would compile Airflow, SQLAlchemy and pandas from source again. uv compiles only when
# asked and only what it installs now, hence compileall (~20 s once, ~3 s when up to date),
# leaving out the packages' own test suites (a sixth of the files), which nothing here imports.
$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	@# the distribution was called retrieval-eval (another project's name on PyPI) before it was
	@# rag-retrieval-eval: a venv made then would keep both, each owning the same files
	@if $(PY) -m pip show -q retrieval-eval >/dev/null 2>&1; then \
	  $(PY) -m pip uninstall -q -y retrieval-eval; fi
	@if $(PY) -m pip install -q uv 2>/dev/null; then \
	  $(BIN)/uv pip install -q --python $(PY) -e ".[$(EXTRAS)]"; \
	else $(PY) -m pip install -q -e ".[$(EXTRAS)]"; fi
	@# the tests check RBO against the rbo package, whose metadata pins numpy<2 (pandas 3 needs
	@# numpy 2) though its code runs on either: installed without its dependencies (tqdm is here)
	@if test -x $(BIN)/uv; then $(BIN)/uv pip install -q --python $(PY) --no-deps "rbo==0.1.3"; \
	else $(PY) -m pip install -q --no-deps "rbo==0.1.3"; fi
	@$(PY) -m compileall -q -j0 -x '/tests?/' $(VENV)/lib > /dev/null
	@touch $(STAMP)

install: $(STAMP)

# The project's own code is byte-compiled too, as installing its wheel would do: with
# PYTHONDONTWRITEBYTECODE=1 an editable install compiles ~150 modules from source in every
# process (each Airflow task, each CLI call): ~20 ms of a DAG file's parse. Stale files are
# only ignored (Python checks the source's mtime), so this runs before every use (~0.3 s);
# `python -m benchmarks` compiles the same folders itself (benchmarks/common.compile_package).
COMPILE := $(PY) -m compileall -q -j0 retrieval_eval dags plugins benchmarks > /dev/null

# The demo's store and spool stay in the git-ignored .retrieval_eval/ and Airflow's home in
# .airflow/: the first run is the BASELINE, later ones compare with it.
DEMO_ENV := RETRIEVAL_EVAL_HOME=$(CURDIR)/.retrieval_eval \
  RETRIEVAL_EVAL_DB=sqlite:///$(CURDIR)/.retrieval_eval/demo.sqlite \
  RETRIEVAL_EVAL_CONFIG=$(CURDIR)/examples/retrieval_eval.yaml
AIRFLOW_ENV := $(DEMO_ENV) AIRFLOW_HOME=$(CURDIR)/.airflow \
  AIRFLOW__CORE__DAGS_FOLDER=$(CURDIR)/dags AIRFLOW__CORE__PLUGINS_FOLDER=$(CURDIR)/plugins \
  AIRFLOW__CORE__LOAD_EXAMPLES=False
DEMO_DAG := retrieval_eval__handbook_demo__handbook_bm25

demo: install
	@$(COMPILE)
	@mkdir -p .retrieval_eval .airflow
	$(DEMO_ENV) $(BIN)/retrieval-eval run handbook.demo handbook_bm25
	@echo; echo "Now the same evaluation as an Airflow DAG run (dag.test(), in-process):"
	@$(AIRFLOW_ENV) $(BIN)/airflow db migrate > .airflow/db-migrate.log 2>&1
	@$(AIRFLOW_ENV) $(PY) -m retrieval_eval.airflow.testrun $(DEMO_DAG) --log .airflow/demo-dag.log
	@cat examples/next-steps.txt

# airflow standalone with this project's dags/ and plugins/ and the demo config (Ctrl-C stops it)
airflow: install
	@$(COMPILE)
	@mkdir -p .retrieval_eval .airflow
	@echo "Airflow UI: http://localhost:8080  user: admin, password: see" \
	  "$(CURDIR)/.airflow/simple_auth_manager_passwords.json.generated once it has started"
	# standalone starts its components as `airflow ...` commands: the venv must be on PATH
	PATH="$(CURDIR)/$(BIN):$$PATH" $(AIRFLOW_ENV) AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=admin:admin \
	  $(BIN)/airflow standalone

# lint-imports checks .importlinter's layers (`tools/folder_cycles.py` lists the folder cycles left)
lint: install
	$(BIN)/ruff check retrieval_eval tests dags plugins benchmarks tools
	$(BIN)/ruff format --check retrieval_eval tests dags plugins benchmarks tools
	$(BIN)/lint-imports --no-cache

typecheck: install
	$(BIN)/mypy

# Two workers (this machine kind has 2 cores), one test module per worker at a time, so
# module-scoped fixtures (a dag.test() scenario, a deployment) run once; the slowest 15 tests are
# listed at the end, so CI's log shows where the time goes. `make unit PYTEST_ARGS=...` overrides.
PYTEST_ARGS ?= -n 2 --dist loadscope --durations=15
unit: install
	@$(COMPILE)
	$(BIN)/pytest $(PYTEST_ARGS)

# The documentation site (mkdocs.yml, docs/) into the git-ignored .site/: --strict fails on a
# broken link or a page left out of the nav; the reference pages are generated from the code
# (tools/docs_reference.py). Offline: no fonts or plugins fetch anything.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

test: lint typecheck docs unit

# One table of ratios, each measured in the same run (docs/benchmarks.md explains them); about
# 5-10 minutes on a 2-core machine. `make bench BENCH="scoring memory"` runs a subset.
bench: install
	$(PY) -m benchmarks $(BENCH)

# Targeted mutations (tools/mutate.py) in a temporary copy, each against the tests that guard
# its rule; fails when a scoring, baseline, saving or escaping mutation survives. A few minutes;
# `make mutate MUTATE="--area webui"` runs a subset.
.PHONY: mutate
mutate: install
	$(PY) tools/mutate.py $(MUTATE)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .site
