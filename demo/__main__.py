"""Command line of the real demo (`make run` runs it before starting the app).

    python -m demo build [--database-url URL] [--data-root DIR]
    python -m demo readme [--readme PATH] [--database-url URL] [--data-root DIR]

`build` builds the demo study's speech, clip pairs and calls (demo.build) once; later runs return
at once. `readme` writes the built demo's pair counts into README.md's demo block (demo.readme).
The database is --database-url, else $DATABASE_URL, else the SQLite file in the data root
(--data-root, else $TURNTAKING_DATA or ./data), as for the app.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from demo.build import DemoBuildError, build_demo, is_built, pair_counts  # noqa: E402
from demo.readme import README, ReadmeError, with_pairs  # noqa: E402
from storage import db  # noqa: E402
from storage.files import default_data_root  # noqa: E402
from studies.systems import SystemError_  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build the demo study (speech, clip pairs, calls) if not built yet")
    build.add_argument("--database-url", help="default: $DATABASE_URL, else SQLite in the data root")
    build.add_argument("--data-root", help="default: $TURNTAKING_DATA or ./data")
    readme = commands.add_parser("readme", help="write the built demo's pair counts into the README's demo block")
    readme.add_argument("--readme", type=Path, default=README, help="default: the checkout's README.md")
    readme.add_argument("--database-url", help="default: $DATABASE_URL, else SQLite in the data root")
    readme.add_argument("--data-root", help="default: $TURNTAKING_DATA or ./data")
    args = parser.parse_args(argv)

    data_root = Path(args.data_root) if args.data_root else default_data_root()
    url = args.database_url or os.environ.get("DATABASE_URL") or \
        f"sqlite:///{(data_root / db.DATABASE_FILENAME).resolve()}"
    try:
        engine = db.make_engine(url)
        db.init_db(engine)
        if args.command == "readme":
            return write_readme(engine, args.readme)
        summary = build_demo(engine, url, data_root)
    except (DemoBuildError, SystemError_, db.DatabaseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary))
    return 0


def write_readme(engine, readme: Path) -> int:
    if not is_built(engine):
        print("error: the demo is not built in this database: run `python -m demo build` first", file=sys.stderr)
        return 1
    try:
        readme.write_text(with_pairs(readme.read_text(), pair_counts(engine)))
    except (OSError, ReadmeError) as exc:
        print(f"error: {readme}: {exc}", file=sys.stderr)
        return 1
    print(f"wrote the demo's pair counts into {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
