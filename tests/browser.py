"""Browser tests' helpers: the app served on a free localhost port, and Debian's headless Chromium.

    with serve(build_app(...)) as base_url, chromium() as browser:
        page = browser.new_page()
        page.goto(base_url + "/participate/")

Chromium is Debian's (/usr/bin/chromium, `apt-get install chromium`); Playwright never downloads
a browser here. Without the background-networking flags Chromium keeps dialling out into the
closed network.
"""

from __future__ import annotations

import socket
import threading
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn
from playwright.sync_api import expect, sync_playwright

from tests.waiting import poll

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SERVER_START_TIMEOUT_S = 30.0
# Playwright's `expect` waits 5 s by default: on the suite's loaded machine a page's answer to a
# click (a request, a database write, the next trial) can take longer. The wait ends at the event,
# so a passing test is no slower; only a failing one waits the full time.
expect.set_options(timeout=30_000)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(url: str) -> bool:
    """Whether a server answers GET `url` with 200 (a poll condition: False while it starts)."""
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def serve(app, host: str = "127.0.0.1", port: int | None = None, on_thread=None, **options):
    """Run the ASGI `app` with uvicorn in a background thread; yields its base URL (https:// when
    `options`, uvicorn's settings, give `ssl_certfile`). `on_thread`: called first on that thread
    (e.g. to join a network namespace, tests/netlab.py)."""
    port = port or free_port()
    # A stream still open at the end (a Gradio client's heartbeat) is cut after 2 s: uvicorn's
    # default waits for it without end, and the thread below was given up at 10 s, its port open.
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                           **{"lifespan": "on", "timeout_graceful_shutdown": 2, **options}))
    failed: list[BaseException] = []

    def run():
        try:
            if on_thread is not None:
                on_thread()
        except BaseException as e:  # raised below, in the test's thread
            failed.append(e)
            return
        server.run()

    thread = threading.Thread(target=run, name=f"uvicorn:{port}", daemon=True)
    thread.start()
    poll(lambda: server.started or failed or not thread.is_alive(), SERVER_START_TIMEOUT_S, poll_s=0.05)
    if failed:
        raise failed[0]
    if not server.started:
        raise RuntimeError(f"the app did not start on {host}:{port}")
    try:
        yield f"{'https' if options.get('ssl_certfile') else 'http'}://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def chromium(*extra_args: str):
    """A headless Debian Chromium driven by Playwright; `extra_args` go after CHROMIUM_ARGS."""
    if not CHROMIUM.exists():
        # Not a skip: browser tests need it (make test installs it as root).
        raise RuntimeError(f"{CHROMIUM} not found: apt-get install -y chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=[*CHROMIUM_ARGS, *extra_args],
                                             headless=True)
        try:
            yield browser
        finally:
            browser.close()


def log_in_researcher(page, base_url: str, password: str, user: str = "researcher") -> None:
    """Fill in and send the researcher area's login form (Gradio's)."""
    page.goto(f"{base_url}/analyze/")
    page.get_by_label("username").fill(user)
    page.get_by_label("password").fill(password)
    page.get_by_role("button", name="Login").click()
