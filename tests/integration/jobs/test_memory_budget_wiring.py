"""The scan and render jobs weigh their items (#12, memory per item): each by what its
own decode will cost (media.cost), and a file outside the library's roots by the
floor, unopened (its item then fails unread)."""

from __future__ import annotations

from photo_pipeline.media.cost import FLOOR, check_cost, render_cost
from photo_pipeline.media.render import RenderSettings
from photo_pipeline.pipeline.files import paths
from photo_pipeline.pipeline.ingest import scan
from photo_pipeline.pipeline.renditions import render
from tests.factories.photos import picture


def test_scan_and_render_weigh_their_items_by_their_own_decodes(tmp_path):
    source = tmp_path / "photos"
    source.mkdir()
    photo = source / "progressive.jpg"
    picture((2000, 1500)).save(photo, "JPEG", progressive=True)
    outside = tmp_path / "elsewhere.jpg"
    picture((2000, 1500)).save(outside, "JPEG", progressive=True)
    (source / "link.jpg").symlink_to(outside)
    allowed = [str(source)]
    settings = RenderSettings(preview_size=1024)

    scan_params = {"sources": [{"id": 3, "path": str(source)}]}
    weight = scan.weigh_file_within(allowed, scan_params, "3:progressive.jpg")
    assert weight == check_cost(photo) > FLOOR + 2000 * 1500 * 3  # the coefficients
    assert scan.weigh_file_within(allowed, scan_params, "3:link.jpg") == FLOOR
    rendering = {**scan_params, "render": scan.render_params(tmp_path / "home", settings)}
    weight = scan.weigh_file_within(allowed, rendering, "3:progressive.jpg")
    assert weight == render_cost(photo, size=1024) > check_cost(photo)  # a scan that renders

    render_params = {"home": str(tmp_path / "home"), "settings": settings.to_params()}
    key = f"7:{'0' * 64}:{paths.to_text(str(photo))}"
    weight = render.weigh_render_within(allowed, render_params, key)
    assert weight == render_cost(photo, size=1024) > check_cost(photo)
    link = f"8:{'0' * 64}:{paths.to_text(str(source / 'link.jpg'))}"
    assert render.weigh_render_within(allowed, render_params, link) == FLOOR
