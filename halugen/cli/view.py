"""The command that shows a store's samples in a browser: view."""

from __future__ import annotations

import argparse
import threading
from typing import Any

from .common import db_path, err, out
from .flags import add_config_flag, add_setting


def add_parsers(sub: Any) -> None:
    view = sub.add_parser(
        "view",
        help="browse a store's samples in a local page (read only; live while a run holds it)",
    )
    add_setting(view, "db", help="the store to show")
    view.add_argument(
        "--store",
        dest="db",
        metavar="PATH",
        default=None,
        help="another name of --db (default: as --db)",
    )
    view.add_argument(
        "--port", type=int, default=8090, help="port on 127.0.0.1 (0: any free one) (default: 8090)"
    )
    view.add_argument("--open", action="store_true", help="open the page in the default browser")
    add_config_flag(view)


def cmd_view(args: argparse.Namespace) -> int:
    from ..view.serving import ViewServer, run_server

    def ready(server: ViewServer) -> None:
        out.print(f"view of {path} at {server.url} (Ctrl-C stops it)")
        if args.open:
            # on a thread: a browser in this terminal (lynx) would otherwise stop the server
            threading.Thread(target=_open_browser, args=(server.url,), daemon=True).start()

    path = db_path(args)
    run_server(path, port=args.port, ready=ready)
    return 0


def _open_browser(url: str) -> None:
    import webbrowser

    if not webbrowser.open(url):
        err.print("note: no browser found to open the page; open the address above yourself")


COMMANDS = {"view": cmd_view}
