"""Fixtures shared by every test folder: keep small; folder-specific ones live in their conftest."""

import os
import sys
import tempfile
import threading
import traceback
from pathlib import Path

# No model hub here: everything loads from packaged files.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
# Calls' leases on a faster clock (studies.sessions: 10 s in a deployment, heartbeat a fifth of
# it): tests of a dead process's call wait out a lease; set before any project module is imported,
# and inherited by the app, call and sweep processes the tests start.
os.environ.setdefault("TURNTAKING_CALL_LEASE_S", "4")

import pytest  # noqa: E402

from tests.rendered_speech import dialogue, dialogue_wav  # noqa: E402, F401  (espeak-ng speech for every folder)

# Real SQLite and PostgreSQL databases for every folder: one PostgreSQL server per test session.
pytest_plugins = ("tests.databases",)


# Converted models (SmolLM2 from its GGUF: ~30-80 s once) are cached across test runs.
os.environ.setdefault("TURNTAKING_MODELS", str(Path(tempfile.gettempdir()) / "turntaking-test-models"))


@pytest.fixture(scope="session")
def cascade_components():
    """The cascade's packaged models, loaded once for all the tests of a pytest process (the
    participant area's, and the HTTPS and remote-participant calls at the top)."""
    from systems.cascaded import CascadedSettings
    from systems.stages import load_stages

    return load_stages(CascadedSettings())


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for a test module (pages and contexts are per test). Not one for the
    session: Playwright's sync API runs an event loop on the main thread while it is open, and
    tests of other modules on the same worker call asyncio.run or open Playwright themselves."""
    from tests.browser import chromium

    with chromium() as launched:
        yield launched


# `make test` runs the tests on several pytest-xdist workers, one group to a worker at a time: each
# file is a group (its module fixtures are built once), except the files whose assertions time a
# dialogue system answering in real time, which form one group and so run one after another (two
# such calls at once would measure the machine, not the system). Groups start longest first, so
# that none of them starts last and keeps the run waiting. (xdist's own `loadgroup` marks do not
# group under pytest 9: it renames the tests' node ids, which pytest 9 no longer reads back.)
REAL_TIME_GROUP = "real-time-calls"
# In this order: the browser call, whose mic-clock health check is the most sensitive to load, comes
# last, after the demo build and the app processes of the first minutes.
REAL_TIME_FILES = (
    "tests/studies/test_first_call.py",
    "tests/systems/test_cascaded.py",
    "tests/systems/test_cascade_backchannel.py",
    "tests/systems/test_predictive.py",  # stops within 0.35 s of an interruption, resumes after a cough
    "tests/systems/test_fullduplex_clients.py",
    "tests/studies/test_realtime_server.py",
    "tests/examiner/test_run_cascade.py",  # the interruption is placed on the system's onset, within 20 ms
    "tests/studies/test_browser_call.py",
)
REAL_TIME_NICE = -10
# Files outside the real-time group whose assertions still time a server in real time, and so run
# at the real-time group's priority beside it: Kyutai's server with a tiny model answers each 80 ms
# frame in about 8 ms on a quiet machine, but at the suite's priority under CI's load it fell 2 s
# behind the caller (37 frames back for 62 sent).
# The peers' calls (a pipecat bot's reply within 1.5 s of the speech's end, the endpoint's stalls
# timed against their limits) are bounded loosely but timed all the same.
PRIORITY_FILES = (*REAL_TIME_FILES, "tests/systems/test_moshi_client.py", "tests/systems/test_pipecat_client.py",
                  "tests/systems/test_llm_endpoint.py")
WORKER_NICE = os.getpriority(os.PRIO_PROCESS, 0)  # as the suite was started
# Measured with `pytest --durations` (longest first; the real-time group leads, about 6 minutes).
LONGEST_FIRST = (
    # the longest of the `alone` files (make test's second run, two at a time: see the Makefile)
    "tests/test_remote_participants.py",
    *REAL_TIME_FILES,
    "tests/demo/test_demo.py",
    "tests/studies/test_lost_calls.py",  # waits out a connection's timeout and an app process's start
    # Kyutai's server with a tiny model answers each 80 ms frame in about 8 ms: its bounds (gaps
    # under 0.5 s, fail-over under 5 s) hold beside other tests at the real-time priority
    # (PRIORITY_FILES), so it runs outside the real-time group.
    "tests/systems/test_moshi_client.py",
    "tests/examiner/test_run_realtime.py",  # times nothing: a served system examined on the same call path
    "tests/examiner/test_run_moshi.py",  # Kyutai's tiny-model server examined: about 30 s, times nothing
    "tests/systems/test_llm_endpoint.py",  # llama.cpp's server: three cascade calls, about 40 s
    "tests/examiner/test_run_pipecat.py",  # a pipecat bot examined: about 30 s
    "tests/test_app_workers.py",
    "tests/studies/test_waiting_room.py",  # a browser waiting in line, an app per test
    "tests/test_https.py",  # an app behind HAProxy's TLS front
    "tests/test_deploy_guide.py",  # the guide's commands in a namespace: coturn, HAProxy, the app
    "tests/studies/test_connection_check.py",  # a check that must fail takes its 12 s
    "tests/studies/test_browser_network.py",
    "tests/studies/test_call_network.py",
    "tests/studies/test_leases.py",
    "tests/test_two_processes.py",
    "tests/test_researcher_browser.py",
    "tests/analysis/test_pseudonymous_exports.py",  # a report and exports on each database, about 45 s
    "tests/annotation/test_annotator_erasure.py",
    "tests/studies/test_silent_call.py",
    "tests/analysis/test_report.py",
    "tests/test_security.py",
    "tests/annotation/test_annotator_browser.py",
    "tests/test_app.py",
    "tests/annotation/test_api.py",
    "tests/test_layers.py",
)


def _set_worker_priority(nice: int) -> bool:
    """Every thread of this worker at `nice` (on Linux a priority belongs to a thread; the threads
    and processes started later inherit it). False where the suite may not raise it (not root)."""
    try:
        for tid in os.listdir("/proc/self/task"):
            os.setpriority(os.PRIO_PROCESS, int(tid), nice)
    except (PermissionError, FileNotFoundError, ProcessLookupError):
        return False
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # The real-time files' calls (this worker's threads, its loaded models' thread pools, and the
    # servers and browsers it starts) get the CPU ahead of the other workers' tests where the suite
    # may raise a priority (as root, as in CI): the assertions time the system, and the load of
    # unrelated tests is not the system's. Back to the suite's own priority for the other files.
    _set_worker_priority(REAL_TIME_NICE if item.nodeid.split("::")[0] in PRIORITY_FILES else WORKER_NICE)


PROJECT = str(Path(__file__).resolve().parents[1])


def project_thread_stacks() -> str:
    """The stacks of this process's other threads that are in the project's code (an app a test
    serves answers its requests in them)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    out = []
    for ident, frame in sys._current_frames().items():
        stack = traceback.extract_stack(frame)
        if ident == threading.get_ident() or not any(
                f.filename.startswith(PROJECT) and "/.venv/" not in f.filename for f in stack):
            continue
        out.append(f"--- thread {names.get(ident, ident)}\n" + "".join(traceback.format_list(stack[-12:])))
    return "\n".join(out)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report shows where the project's other threads were at that moment: a page
    that waited in vain for a view (seen once in a loaded suite run: a session view pending for
    60 s) then shows where its handler was."""
    report = yield
    if report.failed and call.when == "call":
        stacks = project_thread_stacks()
        if stacks:
            report.sections.append(("project threads at the failure", stacks))
    return report


def pytest_configure(config):
    # A file renamed or moved would silently leave the real-time group, its priority and its place
    # in the order: the suite refuses to start instead.
    missing = sorted(path for path in {*LONGEST_FIRST, *PRIORITY_FILES} if not Path(PROJECT, path).exists())
    if missing:
        raise pytest.UsageError(f"tests/conftest.py names test files that are not there: {', '.join(missing)}")
    config.addinivalue_line("markers", "alone: needs a machine not saturated by the other tests; make test runs "
                                       "these after the parallel run, two files at a time (-m alone)")
    config.addinivalue_line("markers", "machine_to_itself: an `alone` test that runs after the others, by itself "
                                       "(its real-time calls disturb, or are disturbed by, a call beside them)")
    config.addinivalue_line("markers", "measurement: measures a figure for the documents rather than checking "
                                       "behaviour; make test leaves it out")


def pytest_collection_modifyitems(items):
    rank = {path: k for k, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


def group_of(nodeid: str) -> str:
    path = nodeid.split("::")[0]
    return REAL_TIME_GROUP if path in REAL_TIME_FILES else path


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class FileGroups(LoadScopeScheduling):
        """xdist's scheduling by scope, with group_of as the scope, in the order collected (not
        reordered by the count of tests), and a further group given to a worker only when it is on
        its last test (xdist asks ahead at two: that queues a group behind a long test which an idle
        worker could have run; a worker needs one test ahead to finish the one it runs)."""

        def _reschedule(self, node) -> None:
            if not node.shutting_down and self.workqueue and self._pending_of(self.assigned_work[node]) > 1:
                return
            super()._reschedule(node)

        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    config.option.loadscopereorder = False
    return FileGroups(config, log)
