"""``/docs``: Swagger UI for the API's OpenAPI schema, served from this server alone.

The assets come from the ``fastapi-offline`` package (a current Swagger UI build), so
the page loads nothing from a CDN, and its start-up script is a file too, so the page
keeps a strict Content-Security-Policy (no inline script or style).
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse, HTMLResponse, Response

ASSETS = files("fastapi_offline") / "static"
_ASSET_TYPES = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon.png": "image/png",
}

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} – API docs</title>
<link rel="icon" type="image/png" href="/docs/assets/favicon.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
"""

_INIT = """window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  layout: "BaseLayout",
});
"""

# The UI pages' policy, plus data: images (Swagger UI's icons are data: URIs in its CSS).
DOCS_IMG_SRC = "img-src 'self' data:"


def mount(app: FastAPI) -> None:
    page = _PAGE.format(title=app.title)

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(page, headers={"cache-control": "no-cache"})

    @app.get("/docs/init.js", include_in_schema=False)
    def init() -> Response:
        return Response(_INIT, media_type="text/javascript")

    @app.get("/docs/assets/{name}", include_in_schema=False)
    def asset(name: str) -> FileResponse:
        if name not in _ASSET_TYPES:
            raise HTTPException(404, f"no docs asset {name!r}")
        return FileResponse(
            str(ASSETS / name), media_type=_ASSET_TYPES[name], headers={"cache-control": "no-cache"}
        )
