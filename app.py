"""The web app: three areas on one server.

    /             landing page linking the three areas
    /participate  participants talk to dialogue systems (public)
    /annotate     annotators judge natural vs timing-perturbed clips (public)
    /analyze      researchers see turn-taking statistics (login: user "researcher")

One FastAPI app with one Gradio Blocks mounted per area, so that only the researcher area gets
Gradio's login (`auth=` of `gr.mount_gradio_app`); the other two stay public. The researcher
password comes from TURNTAKING_RESEARCHER_PASSWORD, or is generated at start-up and printed.

    python app.py [--host 127.0.0.1] [--port 7860] [--database-url sqlite:///data/turntaking.db]
                  [--base-url https://studies.example.org] [--workers N]
                  [--tls-cert fullchain.pem --tls-key privkey.pem] [--ice-servers ice.json] [--call-slots N]
                  [--demo-examiner]

`--demo-examiner` (`make run` passes it): the demo study's systems are examined in the background
(demo/examination.py) for the researcher view "Automatic benchmark".

`--tls-cert`/`--tls-key`: the app speaks https (participants' browsers give a page the microphone
only over https, or on the participant's own computer); with `--workers N` HAProxy's front does.
`--ice-servers`: the STUN/TURN servers of every call, both ends (studies/ice.py), for participants
behind NAT routers and firewalls.

`--call-slots N`: the calls of embedded systems (the cascade's kinds) this process carries at once;
further participants wait in line (studies/call_slots.py; default $TURNTAKING_CALL_SLOTS, else 1.5
per core, the cores shared among `--workers N`).

`--workers N` (N > 1) serves the same address from N app processes behind HAProxy, each browser
kept on one process (app_workers.py says how and why); they share the database (PostgreSQL
recommended) and the data root.

Started from the command line, the app loads the dialogue systems' models in the background at
once (a call page that opens earlier says what it waits for) and records its address in the data
root, so that `python -m annotation annotators` prints links to it (storage.base_url).
"""

from __future__ import annotations

import argparse
import html
import logging
import os
import secrets
import socket
import sys
from pathlib import Path

# Before gradio is imported: no usage statistics and no model hub (the network is closed).
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from typing import TYPE_CHECKING  # noqa: E402

import app_workers  # noqa: E402
from demo.examination import attach_examination  # noqa: E402
from webguard.login_throttle import LoginThrottle  # noqa: E402
from webguard.public_routes import ClosePublicFileRoutes  # noqa: E402
from webguard.researcher_login import RESEARCHER_USER  # noqa: E402
from webguard.tls import SecureCookies, TlsError, check_tls_files, combined_pem, plain_http_warning  # noqa: E402
from storage import db, demo  # noqa: E402
from storage.base_url import BASE_URL_ENV, record_base_url  # noqa: E402
from storage.login_failures import LoginFailureLog  # noqa: E402
from storage.files import default_data_root  # noqa: E402
from studies.call_slots import CALL_SLOTS_ENV, CallSlotsError, call_slots_setting, default_call_slots  # noqa: E402
from studies.ice import ICE_SERVERS_FILE_ENV, IceConfigError, IceSettings, ice_settings  # noqa: E402

if TYPE_CHECKING:
    import gradio as gr
    from fastapi import FastAPI

PASSWORD_ENV = "TURNTAKING_RESEARCHER_PASSWORD"
# The Gradio areas' font: Gradio's Source Sans Pro at 400 and 700 only. Gradio's packaged
# SemiBold (600, its headings and some buttons) holds a few glyphs: a heading's first letter was
# drawn in it and the rest in a fallback font. Asked for 600, the browser now takes the full Bold.
GRADIO_FONT_WEIGHTS = (400, 700)
STATIC = Path(__file__).resolve().parent / "static"  # the plain pages' stylesheet, the icon
DEFAULT_PORT = 7860
# (path, title, what it is for); the order is the landing page's.
AREAS = [
    ("participate", "Participate", "Talk to spoken dialogue systems in your browser."),
    ("annotate", "Annotate", "Listen to pairs of dialogue clips and judge which sounds more natural."),
    ("analyze", "Analyze", "Researchers: turn-taking statistics of recordings and studies (login required)."),
]


class ConfigError(ValueError):
    """A start-up setting that cannot be used; the message names it."""


def resolve_researcher_password(given: str | None = None) -> tuple[str, bool]:
    """(password, generated): `given`, else $TURNTAKING_RESEARCHER_PASSWORD, else a random one."""
    if given is not None:
        if not given:
            raise ConfigError("researcher password is empty")
        return given, False
    from_env = os.environ.get(PASSWORD_ENV)
    if from_env is not None:
        if not from_env:
            raise ConfigError(f"{PASSWORD_ENV} is set but empty; unset it to get a generated password")
        return from_env, False
    return secrets.token_urlsafe(12), True


def open_database(database_url: str | None = None, data_root=None):
    """An engine on the app's database, created or upgraded, holding the demo study.

    The URL: `database_url`, else $DATABASE_URL, else the SQLite file in `data_root` (default:
    $TURNTAKING_DATA or ./data)."""
    if database_url is None:
        database_url = os.environ.get("DATABASE_URL") or (
            f"sqlite:///{(Path(data_root) / db.DATABASE_FILENAME).resolve()}" if data_root is not None else None
        )
    engine = db.make_engine(database_url or db.default_database_url())
    db.init_db(engine)
    with db.session_scope(engine) as session:
        demo.seed_demo_study(session)
    return engine


def landing_page() -> str:
    links = "\n".join(
        f'<li><a href="/{path}/">{title}</a> — {html.escape(about)}</li>' for path, title, about in AREAS
    )
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Turn-taking studies</title>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<link rel='stylesheet' href='/static/app.css'></head>"
        "<body><main><h1>Turn-taking studies</h1>"
        "<p>A platform for user studies of turn-taking in spoken dialogue systems.</p>"
        f"<ul>{links}</ul></main></body></html>"
    )


def gradio_theme() -> gr.themes.Theme:
    """Gradio's default theme with a font whose every weight in use has every glyph."""
    import gradio as gr

    return gr.themes.Default(font=[gr.themes.LocalFont("Source Sans Pro", weights=GRADIO_FONT_WEIGHTS),
                                   "ui-sans-serif", "system-ui", "sans-serif"])


def ice_configuration() -> IceSettings:
    """The calls' ICE servers from the environment (studies.ice; `--ice-servers FILE` sets
    $TURNTAKING_ICE_SERVERS_FILE); ConfigError (one line) for a bad setting."""
    try:
        return ice_settings()
    except IceConfigError as exc:
        raise ConfigError(str(exc)) from None


def build_app(database_url: str | None = None, data_root=None, researcher_password: str | None = None,
              prepare_models: bool = False, background_analysis: bool = False,
              analysis_worker: bool = True, call_slots: int | None = None,
              demo_examiner: bool = False) -> FastAPI:
    """The whole app; `app.state.researcher_password` (and `.password_generated`) tell the login.
    `prepare_models`: start loading the dialogue systems' models in the background now.
    `call_slots`: the calls of embedded systems this process carries at once, the others wait in
    line (studies.call_slots; None: $TURNTAKING_CALL_SLOTS, else 1.5 per core).
    `background_analysis`: a worker process computes the studies' results as calls end and clips
    and judgments arrive, and the researcher views only read them (analysis.background);
    `analysis_worker` False: that worker runs elsewhere (another process of `--workers N`).
    `demo_examiner`: a process examines the demo study's systems in the background and stores the
    runs for the view "Automatic benchmark" (demo.examination; `make run` asks for it)."""
    password, generated = resolve_researcher_password(researcher_password)
    ice = ice_configuration()  # read once: every call of this process uses these servers
    engine = open_database(database_url, data_root)
    # The web libraries and the areas (each loads Gradio) only now: `app.py` with a bad setting,
    # `--help` and the front of `--workers N` answer without them (Gradio's import is 3-4 s).
    from fastapi import FastAPI
    from fastapi.responses import FileResponse, HTMLResponse

    from analysis import dashboard
    from analysis.researcher_routes import login_recorder
    from annotation import web as annotation_web
    from studies import web as studies_web

    app = FastAPI(title="Turn-taking studies")
    app.state.engine = engine
    app.state.data_root = Path(data_root) if data_root is not None else default_data_root()
    app.state.researcher_password = password
    app.state.password_generated = generated
    app.state.ice = ice

    @app.get("/", response_class=HTMLResponse)
    def landing():
        return landing_page()

    # The call and trial pages share one stylesheet; browsers ask every page for the icon.
    @app.get("/static/app.css")
    def stylesheet():
        return FileResponse(STATIC / "app.css", media_type="text/css")

    @app.get("/static/steps.js")
    def steps_script():
        return FileResponse(STATIC / "steps.js", media_type="text/javascript")

    @app.get("/static/withdrawn.js")
    def withdrawn_script():  # what every page that lets people withdraw shows them after
        return FileResponse(STATIC / "withdrawn.js", media_type="text/javascript")

    @app.get("/favicon.ico")
    def favicon():
        return FileResponse(STATIC / "favicon.ico", media_type="image/x-icon")

    # Each area lives in its package; app.py only wires them together, with one look.
    theme = gradio_theme()
    studies_web.mount(app, engine, app.state.data_root, prepare_models=prepare_models, theme=theme,
                      call_slots=call_slots, ice=ice)
    annotation_web.mount(app, engine, app.state.data_root, theme=theme)
    dashboard.mount(app, engine, app.state.data_root, password, background=background_analysis,
                    start_worker=analysis_worker, theme=theme)
    if demo_examiner:
        attach_examination(app, engine.url.render_as_string(hide_password=False), app.state.data_root)
    # Researcher files never leave through the public areas (one Gradio file cache is shared).
    app.add_middleware(ClosePublicFileRoutes, public_paths=("/participate", "/annotate"))
    # Password guessing on the researcher login is slowed down and logged.
    # The failures are counted in the database, shared by the processes of `--workers N`.
    # Every login, failed or not, goes into the audit trail.
    app.add_middleware(LoginThrottle, login_paths=("/analyze/login", "/analyze/login/"),
                       failures=LoginFailureLog(engine), on_result=login_recorder(engine))
    # Over https no cookie of the app (the researcher's login above all) may travel in clear.
    app.add_middleware(SecureCookies)
    return app


ALL_ADDRESSES = ("0.0.0.0", "::")


def default_base_url(host: str, port: int, tls: bool) -> str:
    """Where people reach the app when no --base-url says so: localhost for the loopback, this
    machine's name when it listens on every address (other machines cannot open "localhost"),
    else the address it listens on.

    >>> default_base_url("127.0.0.1", 7860, tls=False)
    'http://localhost:7860'
    >>> default_base_url("10.1.2.3", 443, tls=True)
    'https://10.1.2.3:443'
    """
    if host in ("127.0.0.1", "::1", "localhost"):
        shown = "localhost"
    elif host in ALL_ADDRESSES:
        names = [name for name in (socket.getfqdn(), socket.gethostname()) if name and not name.startswith("localhost")]
        shown = names[0] if names else "localhost"
    else:
        shown = host
    if ":" in shown:  # an IPv6 address
        shown = f"[{shown}]"
    return f"{'https' if tls else 'http'}://{shown}:{port}"


def print_start_lines(base: str, password: str, generated: bool) -> None:
    print(f"Turn-taking studies: {base}/")
    for path, title, _ in AREAS:
        print(f"  {title:12} {base}/{path}/")
    if generated:
        print(f"Researcher login: user '{RESEARCHER_USER}', password {password} (generated; set {PASSWORD_ENV} to choose one)")
    else:
        print(f"Researcher login: user '{RESEARCHER_USER}', password from {PASSWORD_ENV}")
    sys.stdout.flush()


def serve_workers(args, base: str, tls=None) -> int:
    """`--workers N`: the database is made ready here once, then N app processes (app_workers)
    open it, all with this process's researcher password."""
    try:
        app_workers.check_worker_count(args.workers)
        haproxy = app_workers.find_haproxy()
        if not app_workers.port_is_free(args.host, args.port):
            raise ConfigError(f"port {args.port} on {args.host} is in use")
        password, generated = resolve_researcher_password()
        engine = open_database(args.database_url)
        backend = engine.url.get_backend_name()
        engine.dispose()
        workers = app_workers.plan_workers(args.workers, args.port)
    except (ConfigError, db.DatabaseError, app_workers.WorkersError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if backend == "sqlite":
        print(f"note: {args.workers} workers share an SQLite file (WAL: writes queue up); "
              "PostgreSQL is recommended (--database-url postgresql://...)", flush=True)

    def worker_command(worker: app_workers.Worker) -> list[str]:
        command = [sys.executable, str(Path(__file__).resolve()), "--host", "127.0.0.1", "--port", str(worker.port),
                   "--base-url", base]
        command += ["--no-background-analysis"] if args.no_background_analysis else []
        command += ["--no-model-preload"] if args.no_model_preload else []
        command += ["--demo-examiner"] if args.demo_examiner else []  # only w1 starts it
        # The cores are shared by the workers: by default each carries its share of the calls.
        if args.call_slots is not None or CALL_SLOTS_ENV not in os.environ:
            command += ["--call-slots", str(args.call_slots or default_call_slots(processes=args.workers))]
        return command + (["--database-url", args.database_url] if args.database_url else [])

    # HAProxy terminates TLS; the workers stay plain HTTP on 127.0.0.1 behind it.
    supervisor = app_workers.Supervisor(workers, worker_command, {**os.environ, PASSWORD_ENV: password}, haproxy,
                                        args.host, args.port, tls_pem=combined_pem(tls) if tls else None)
    return supervisor.run(started=lambda: print_start_lines(base, password, generated))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Turn-taking study platform (web app)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--database-url", default=None, help="SQLAlchemy URL (default: $DATABASE_URL or SQLite under the data root)")
    parser.add_argument("--base-url", default=None,
                        help=f"the address people reach the app at, for printed links (default: ${BASE_URL_ENV}, "
                             "else http://HOST:PORT, or https://HOST:PORT with --tls-cert)")
    parser.add_argument("--no-background-analysis", action="store_true",
                        help="no analysis worker process: the researcher views compute what they show when opened")
    parser.add_argument("--no-model-preload", action="store_true",
                        help="do not load the dialogue systems' models at start-up (a process for annotators and "
                             "researchers; a participant's first call then waits while they load)")
    parser.add_argument("--demo-examiner", action="store_true",
                        help="examine the demo study's embedded systems in the background (a small task set, "
                             "stored for the researcher view 'Automatic benchmark'; `make run` passes it)")
    parser.add_argument("--call-slots", type=int, default=None, metavar="N",
                        help="calls of embedded systems (the cascade's kinds) this process carries at once; "
                             f"further participants wait in line (default: ${CALL_SLOTS_ENV}, else 1.5 per core, "
                             "the cores shared among --workers)")
    parser.add_argument("--workers", type=int, default=1,
                        help="app processes behind one HAProxy front on --host/--port, each browser kept on "
                             "one of them (default 1: a single process, no HAProxy)")
    parser.add_argument("--tls-cert", default=None, metavar="FILE",
                        help="PEM certificate (with its chain, e.g. certbot's fullchain.pem): serve https; "
                             "needs --tls-key")
    parser.add_argument("--tls-key", default=None, metavar="FILE", help="the certificate's PEM private key")
    parser.add_argument("--ice-servers", default=None, metavar="FILE",
                        help="JSON file of the calls' STUN/TURN servers (studies/ice.py; a TURN secret is named in "
                             f"it, never written); default: ${ICE_SERVERS_FILE_ENV} or none")
    args = parser.parse_args(argv)
    if args.ice_servers is not None:
        # In the environment, so that the processes of `--workers N` read the same file.
        os.environ[ICE_SERVERS_FILE_ENV] = str(Path(args.ice_servers).resolve())
    try:  # a bad setting stops here, in one line, before any worker starts
        ice = ice_configuration()
        call_slots_setting(args.call_slots)
        tls = check_tls_files(args.tls_cert, args.tls_key)
    except (ConfigError, CallSlotsError, TlsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if app_workers.WORKER_ENV not in os.environ:
        print(ice.describe(), flush=True)
    if tls is None and (warning := plain_http_warning(args.host, args.port)):
        print(warning, file=sys.stderr, flush=True)
    base = (args.base_url or os.environ.get(BASE_URL_ENV) or default_base_url(args.host, args.port, tls is not None))
    base = base.rstrip("/")
    if args.host in ALL_ADDRESSES and not (args.base_url or os.environ.get(BASE_URL_ENV)) \
            and app_workers.WORKER_ENV not in os.environ:
        print(f"note: listening on every address of this machine; links (annotators' too) name it {base}: give "
              "--base-url https://YOUR.DOMAIN when people reach it by another name", file=sys.stderr, flush=True)
    if args.workers != 1:
        return serve_workers(args, base, tls)

    import uvicorn

    # The app's own news (a study's systems ready, a failed login) on stderr with a time; the
    # libraries stay at warnings.
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.WARNING)
    logging.getLogger("studies").setLevel(logging.INFO)
    try:
        # Of the N processes of `--workers N`, the first runs the analysis worker for all.
        app = build_app(database_url=args.database_url, prepare_models=not args.no_model_preload,
                        background_analysis=not args.no_background_analysis,
                        analysis_worker=os.environ.get(app_workers.WORKER_ENV, "w1") == "w1",
                        call_slots=args.call_slots,
                        demo_examiner=args.demo_examiner and os.environ.get(app_workers.WORKER_ENV, "w1") == "w1")
    except (ConfigError, db.DatabaseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    record_base_url(app.state.data_root, base)  # the annotator links of `python -m annotation annotators`
    # A worker of `--workers N` prints nothing: the supervising process printed the links.
    if app_workers.WORKER_ENV not in os.environ:
        print_start_lines(base, app.state.researcher_password, app.state.password_generated)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning",
                ssl_certfile=tls.cert if tls else None, ssl_keyfile=tls.key if tls else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
