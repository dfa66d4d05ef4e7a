# The two commands a user needs (see README):  make demo   and   make test
# Everything else here is a convenience around the same virtual environment.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt constraints.txt pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: setup services services-stop demo test docs bench faults reproduce mlflow-ui airflow airflow-stop clean

# Python's own default, restored for everything run from here: each module is compiled once and its bytecode kept
# (__pycache__, git-ignored). Where the environment forbids that (PYTHONDONTWRITEBYTECODE=1, as on this project's CI
# machines), every interpreter the tests and the demo start (the jobs, Airflow's task runs, Spark's Python workers)
# compiled every module it imported from source: 6.5 s instead of 2.1 s to import the job's modules, measured.
unexport PYTHONDONTWRITEBYTECODE

# --no-compile: pip would byte-compile every installed module (Airflow, MLflow, PySpark: 89 s of a 55 s install
# measured here); Python compiles the few it imports on first use instead.
# Then the project itself, editable (pyproject.toml): the `elastic` command on .venv/bin, the code read from here.
$(STAMP): requirements.txt constraints.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile -r requirements.txt -c constraints.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile --no-deps -e .
	@rm -f $(VENV)/.installed-* && touch $@

# The Spark driver's class-data-sharing archive (jobs/jvm_archive.py: one 4-s run of the job, about 40 s, once per JDK
# and PySpark, kept in .local/jvm): every driver the project starts in-process maps it, a quarter less CPU to start.
setup: $(STAMP)  ## create .venv with the pinned dependencies and the Spark driver's class archive
	@$(BIN)/python -m jobs.jvm_archive > /dev/null

# What the server-configuration tests use and the embedded default does not: a PostgreSQL server on 127.0.0.1:5432
# (user postgres, trust on loopback; installed from Debian's packages where missing, which needs root or sudo) and the
# Java artifacts in .local/jars (Spark's Kafka connector, a Kafka broker), resolved by Maven once and used offline
# afterwards. Without them those tests skip, saying why; CI starts them and requires them (.ci/run).
services: setup  ## start PostgreSQL on 127.0.0.1:5432 and resolve the Java artifacts (deploy/postgres.py, deploy/jars.py)
	$(BIN)/python -m deploy.postgres start --install
	$(BIN)/python -m deploy.jars resolve

services-stop:  ## stop the PostgreSQL server `make services` started (never one it found running)
	$(PYTHON) -m deploy.postgres stop

demo: setup  ## run the demo experiment (3 controller variants x 60 s on local Spark), print the comparison
	$(BIN)/python -m analysis.demo

# Three groups. The Spark modules that only check what happened run two at a time, each module whole on one process
# (--dist loadfile: a module's runs are made once). Then the `timing` tests, which check how many batches ran, when
# an action came or what the costs a run measured led to, run without another Spark run beside them; their runs are
# mostly light loads that leave a core idle, so the tests that need no Spark run meanwhile at the lowest CPU priority (nice 19: the kernel gives them
# what the timing runs leave), two at a time to take idle time on either core. Those print their output when both
# are done, keep their temporary folders outside the repository as a test's tmp_path always is (left in place when
# one failed), and stop if the target is interrupted.
# Every group always runs; the target fails if any did. The first group is CPU-bound (both cores busy throughout,
# measured): its Spark drivers run with the JVM's quick (C1) compiler only, which a run of seconds mostly spends
# compiling for (a 6 s run: 39 CPU-seconds instead of 55, measured); the timing runs keep the JVM's defaults, as users
# run them. Every Spark driver maps its classes from the class-data-sharing archive `setup` built (given here to the
# drivers the tests start through spark-submit too); a driver that cannot use it starts as before.
test: setup  ## run the test suite (unit + integration on real local Spark, Airflow and MLflow)
	@mkdir -p .local; \
	c1="$${SPARK_SUBMIT_OPTS:--XX:TieredStopAtLevel=1}"; \
	archive=$$(SPARK_SUBMIT_OPTS="$$c1" $(BIN)/python -m jobs.jvm_archive); \
	export SPARK_SUBMIT_OPTS="$${SPARK_SUBMIT_OPTS:-} $$archive"; \
	SPARK_SUBMIT_OPTS="$$c1 $$archive" \
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "spark and not timing"; spark=$$?; \
	base=$$(mktemp -d); \
	nice -n 19 $(BIN)/python -m pytest -n 2 --dist loadfile -m "not spark" -p no:cacheprovider --basetemp=$$base/tmp \
		> .local/test-no-spark.log 2>&1 & no_spark_pid=$$!; \
	trap 'kill $$no_spark_pid 2>/dev/null' INT TERM; \
	$(BIN)/python -m pytest -m timing; timing=$$?; \
	wait $$no_spark_pid; no_spark=$$?; \
	echo "---- the tests that need no Spark (run at nice 19 beside the timing modules):"; \
	cat .local/test-no-spark.log; \
	test $$no_spark -ne 0 || rm -rf $$base; \
	test $$spark -eq 0 -a $$timing -eq 0 -a $$no_spark -eq 0

docs: setup  ## build the documentation site into .local/site (strict: a broken link or reference fails); open index.html
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	@echo "site: file://$(CURDIR)/.local/site/index.html"

bench: setup  ## run the benchmarks (docs/benchmarks.md); never together with another heavy job
	$(BIN)/python -m benchmarks.workloads
	$(BIN)/python -m benchmarks.foundation
	$(BIN)/python -m benchmarks.dag_parse
	$(BIN)/python -m benchmarks.multilevel

faults: setup  ## inject each fault for real, check the project's promises, write docs/reliability.md
	$(BIN)/python -m benchmarks.faults --out docs/reliability.md

reproduce: setup  ## run what docs/reproduction.md and docs/seep.md lack in the MLflow store (FORCE=1: all; ~3.4 h on 2 cores), write both
	$(BIN)/python -m studies.reproduction --run $(if $(FORCE),all,missing); status=$$?; \
	$(BIN)/python -m studies.seep_timings $(if $(FORCE),--run,--run-missing) && exit $$status

mlflow-ui: setup  ## MLflow UI on the embedded store: http://127.0.0.1:5000
	$(BIN)/mlflow ui --backend-store-uri sqlite:///$(CURDIR)/.local/mlflow.db --host 127.0.0.1 --port 5000

airflow: setup  ## local stack on loopback: Airflow http://127.0.0.1:8080 + MLflow server http://127.0.0.1:5000
	$(BIN)/python -m deploy.local_stack start

airflow-stop:  ## stop the local stack started by `make airflow`
	$(BIN)/python -m deploy.local_stack stop

clean:  ## remove local results (MLflow store, artifacts, checkpoints); keeps .venv
	rm -rf .local
