"""Gradio's file routes stay shut on the public areas.

Every Gradio app mounted in one process shares one file cache: a file uploaded in /analyze/ (or a
report or dataset zip it offers for download, which hold participant recordings) could be fetched
without login as /annotate/gradio_api/file=PATH or /participate/gradio_api/file=PATH, since only
/analyze/ checks the login. The public areas' Gradio pages show text only, so they need no file
route and no upload route at all; this middleware answers 404 for them before Gradio sees the
request (and so before an upload body is read).
"""

from __future__ import annotations

import json
import re

# below each public area's mount path; Gradio's routes for files and uploads
CLOSED = ("/gradio_api/file=", "/gradio_api/file/", "/gradio_api/upload", "/gradio_api/upload_progress",
          "/file=", "/file/", "/upload")


class ClosePublicFileRoutes:
    """ASGI middleware: 404 for the file and upload routes of Gradio under `public_paths`."""

    def __init__(self, app, public_paths: tuple[str, ...]):
        self.app = app
        self.closed = tuple(area.rstrip("/") + route for area in public_paths for route in CLOSED)

    async def __call__(self, scope, receive, send):
        # scope["path"] is percent-decoded; repeated slashes are collapsed so that no spelling of
        # a closed route slips past
        if scope["type"] == "http" and re.sub("/+", "/", scope["path"]).startswith(self.closed):
            body = json.dumps({"error": "not found"}).encode()
            await send({"type": "http.response.start", "status": 404,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)
