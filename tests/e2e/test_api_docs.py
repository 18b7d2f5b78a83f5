"""``/docs`` in a real browser: Swagger UI renders the API from this server's own
assets under its Content-Security-Policy, and asks nothing of any other host."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.support.api_server import running_server


def test_docs_render_from_local_assets_under_the_csp(page, shots, tmp_path):
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    with running_server(f"sqlite:///{tmp_path / 'library.sqlite3'}", tmp_path / "home") as server:
        page.goto(server.base_url + "/docs")
        expect(page.locator(".swagger-ui .info .title")).to_contain_text("photo-pipeline")
        expect(page.get_by_text("/api/jobs/{job_id}/cancel").first).to_be_visible()
        page.screenshot(path=shots / "docs.png", full_page=False)
        base_url = server.base_url
    foreign = [url for url in requested if not url.startswith((base_url, "data:"))]
    assert requested and not foreign, foreign
    # The page fixture fails the test on any CSP violation or uncaught script error.
