# Two commands:  `make run` (set up, build the demo once, then start the app)  and  `make test` (set up,
# then run every test).
#
# Set-up = the Debian packages the app and the tests need (installed when running as root), a
# virtualenv in .venv with torch==2.13.0 installed FIRST on its own (any other spec pulls CUDA
# wheels), then requirements.txt, then the carrier packages with --no-deps, then the project itself
# in editable mode (pyproject.toml: its packages and console commands). A stamp file keeps
# repeated runs from reinstalling until a requirements file changes.

PYTHON ?= python3
VENV := .venv
VENV_PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.installed
APT_PACKAGES := espeak-ng sox chromium postgresql haproxy coturn iptables openssl nftables curl
APP_ARGS ?=
WORKERS ?= 1
# `make run TLS_CERT=fullchain.pem TLS_KEY=privkey.pem`: the app over https (docs/deploy.md).
TLS_CERT ?=
TLS_KEY ?=
TLS_ARGS = $(if $(TLS_CERT),--tls-cert $(TLS_CERT)) $(if $(TLS_KEY),--tls-key $(TLS_KEY))
# Test workers (pytest-xdist, one file to a worker at a time; tests/conftest.py): twice the 2
# cores, since most of the slow files wait on real-time calls, browsers and servers, not compute
# (measured: 500 CPU s over a 500 s run on 3 workers, the cores half idle). Not more: six took
# 593 s against four's 545 s, the cores saturated (load average 8.5).
TEST_WORKERS ?= 4
# Beside them, once their own timed files are done (tests/conftest.py, PRIORITY_FILES), the tests
# marked `alone` (browser calls whose mic-clock and alignment checks need the cores when their
# audio is due), two files at a time; then those also marked `machine_to_itself`, by themselves
# (the waiting room's two calls at once, beside another file's call, had late audio blocks; the
# predictive system's overlaps, beside one, made that call's audio late). These have the CPU ahead
# of the parallel run (tests/cpu_first.sh, a CPU cgroup of 100 times the weight), which takes the
# cycles their calls leave. Where no cgroup can be made (not root), they run after it. One after the
# other the three runs took 472 + 121 + 75 s on 4 Dec 2026; side by side see docs/setup.md.
# `make test TEST_STAGES=serial`: one after the other.
ALONE_WORKERS ?= 2
TEST_STAGES ?= side-by-side
# The files holding `alone` tests: collecting only them saves the second run importing every test module.
ALONE_FILES = $(shell grep -rl --include='test_*.py' 'pytest.mark.alone' tests)
MACHINE_TO_ITSELF_FILES = $(shell grep -rl --include='test_*.py' 'pytest.mark.machine_to_itself' tests)

export HF_HUB_OFFLINE = 1
# The suite's model cache (tests/conftest.py's default), filled before the tests start: on a fresh
# machine the packaged LLM's conversion (about 25 CPU s) otherwise held three workers' first tests
# (`make test TEST_MODELS=DIR`: another cache).
ifndef TEST_MODELS
TEST_MODELS := $(or $(TURNTAKING_MODELS),$(or $(TMPDIR),/tmp)/turntaking-test-models)
endif
test: export TURNTAKING_MODELS := $(TEST_MODELS)
# Bytecode is written even where the environment says not to (this machine sets
# PYTHONDONTWRITEBYTECODE=1): the suite starts about 480 Python processes (pytest workers, CLIs,
# app servers, analysis workers), and each compiled the project's modules again (measured: 1,005
# CPU s for the parallel tests without bytecode, 947 s with it; collecting alone 14.2 s -> 10.7 s).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test setup system-packages clean-venv

# The demo study's speech, clip pairs and calls are built on the first run (a few minutes); later
# runs find it built and go straight on. `make run WORKERS=2`: two app processes behind HAProxy
# on the same address (see app_workers.py; PostgreSQL recommended: APP_ARGS=--database-url=...).
# `--demo-examiner`: the demo's systems are examined in the background after start-up (a few
# minutes, once) for the researcher view "Automatic benchmark" (demo/examination.py).
run: setup
	$(VENV_PYTHON) -m demo build
	$(VENV_PYTHON) app.py --workers $(WORKERS) --demo-examiner $(TLS_ARGS) $(APP_ARGS)

PARALLEL_TESTS = $(VENV_PYTHON) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not alone and not measurement" --durations=12 tests
ALONE_TESTS = $(VENV_PYTHON) -m pytest -q -n $(ALONE_WORKERS) --dist loadfile -m "alone and not machine_to_itself and not measurement" $(or $(ALONE_FILES),tests) \
	&& $(VENV_PYTHON) -m pytest -q -m "machine_to_itself and not measurement" $(or $(MACHINE_TO_ITSELF_FILES),tests)

# Side by side, the `alone` tests' output is kept in a file and shown once both runs end (an
# interrupted run stops both).
test: setup
	$(VENV)/bin/lint-imports
	$(VENV_PYTHON) -m studies prepare-models
	@if [ "$(TEST_STAGES)" = serial ] || ! tests/cpu_first.sh true; then \
		echo "the tests marked alone run after the others"; \
		$(PARALLEL_TESTS) && $(ALONE_TESTS); \
	else \
		log=$$(mktemp); timed_done=$$(mktemp -u); \
		( while [ ! -e $$timed_done ]; do sleep 1; done; tests/cpu_first.sh sh -c '$(ALONE_TESTS)' ) > $$log 2>&1 & alone=$$!; \
		trap 'kill -- $$alone 2>/dev/null; pkill -P $$alone 2>/dev/null' INT TERM; \
		echo "the tests marked alone start beside these once their timed files are done; their output below at the end"; \
		TURNTAKING_TIMED_FILES_DONE=$$timed_done $(PARALLEL_TESTS); parallel=$$?; \
		touch $$timed_done; wait $$alone; alone_rc=$$?; rm -f $$timed_done; \
		echo "--- the tests marked alone:"; cat $$log; rm -f $$log; \
		test $$parallel = 0 && test $$alone_rc = 0; \
	fi

setup: system-packages $(STAMP)

# dpkg-query tells what is installed; apt-get update runs only when something is missing.
system-packages:
	@missing=""; \
	for pkg in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$pkg 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = "0" ]; then \
			echo "installing Debian packages:$$missing"; \
			DEBIAN_FRONTEND=noninteractive apt-get update -q && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing || exit 1; \
		else \
			echo "missing Debian packages:$$missing -- install them with: sudo apt-get install -y$$missing" >&2; \
			exit 1; \
		fi; \
	fi

$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	test -x $(VENV_PYTHON) || $(PYTHON) -m venv $(VENV)
	$(VENV_PYTHON) -m pip install -q torch==2.13.0
	$(VENV_PYTHON) -m pip install -q -r requirements.txt
	$(VENV_PYTHON) -m pip install -q --no-deps -r requirements-nodeps.txt
	$(VENV_PYTHON) -m pip install -q --no-deps --no-build-isolation -e .
	$(VENV_PYTHON) -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
	touch $@

clean-venv:
	rm -rf $(VENV)
