"""media.cost: decode estimates from headers, on real files written by Pillow, libvips
and pillow-heif. The figures themselves were calibrated against measured peaks
(bench/memory.py prints estimate against measurement per format)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import pyvips
from PIL import Image

from photo_pipeline.media import cost
from photo_pipeline.media.cost import FLOOR, check_cost, render_cost
from tests.factories import photos, videos

W, H = 1001, 701  # not a multiple of any MCU: the padding counts


def blocks(pixels: int, step: int) -> int:
    return math.ceil(pixels / step)


def round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def test_a_progressive_jpeg_costs_its_whole_coefficient_buffer(tmp_path):
    picture = photos.picture((W, H))
    picture.save(tmp_path / "p420.jpg", "JPEG", progressive=True)  # 4:2:0 by default
    picture.save(tmp_path / "b420.jpg", "JPEG")
    picture.save(tmp_path / "p444.jpg", "JPEG", progressive=True, subsampling=0)
    picture.convert("L").save(tmp_path / "grey.jpg", "JPEG", progressive=True)
    # libjpeg's arrays: luma in 2x2-block MCUs, each chroma plane at half size; 128 B a block
    luma = round_up(blocks(W, 8), 2) * round_up(blocks(H, 8), 2)
    chroma = blocks(W, 16) * blocks(H, 16)
    expected_420 = (luma + 2 * chroma) * 128
    assert check_cost(tmp_path / "p420.jpg") - check_cost(tmp_path / "b420.jpg") == expected_420
    assert render_cost(tmp_path / "p420.jpg") - render_cost(tmp_path / "b420.jpg") == expected_420
    expected_444 = 3 * blocks(W, 8) * blocks(H, 8) * 128
    assert check_cost(tmp_path / "p444.jpg") - check_cost(tmp_path / "b420.jpg") == expected_444
    eighth = blocks(W, 8) * blocks(H, 8)
    assert check_cost(tmp_path / "grey.jpg") == FLOOR + blocks(W, 8) * blocks(H, 8) * 128 + eighth


def test_a_baseline_jpeg_costs_its_scaled_decode_whatever_its_size(tmp_path):
    for name, size in (("12mp.jpg", (4000, 3000)), ("48mp.jpg", (8000, 6000))):
        Image.new("RGB", size, "grey").save(tmp_path / name, "JPEG")
    # shrink-on-load: 1/2 and 1/4 scale give the same 2000x1500 to resize from
    assert render_cost(tmp_path / "12mp.jpg") == render_cost(tmp_path / "48mp.jpg")
    assert render_cost(tmp_path / "48mp.jpg") < 64 * cost.MIB
    Image.new("RGB", (8000, 6000), "grey").save(tmp_path / "p.jpg", "JPEG", progressive=True)
    assert render_cost(tmp_path / "p.jpg") > render_cost(tmp_path / "48mp.jpg") + 130 * cost.MIB


def test_only_the_header_is_read(tmp_path):
    """A progressive JPEG cut just past its first scan's header costs what it whole does."""
    whole = tmp_path / "whole.jpg"
    photos.picture((W, H)).save(whole, "JPEG", progressive=True)
    data = whole.read_bytes()
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(data[: data.index(b"\xff\xda") + 16])
    assert render_cost(cut) == render_cost(whole) > FLOOR + 128 * W * H // 64


def test_png_interlaced_decodes_whole_and_plain_streams(tmp_path):
    plain = photos.png(tmp_path / "plain.png", size=(W, H))
    interlaced = tmp_path / "interlaced.png"
    pyvips.Image.new_from_file(str(plain)).pngsave(str(interlaced), interlace=True)
    assert render_cost(interlaced) == cost._PIPELINE + math.ceil(1.15 * 3 * W * H)
    assert render_cost(plain) == cost._STREAM + math.ceil(0.75 * W * H)
    rgba16 = tmp_path / "rgba16.png"
    pyvips.Image.new_from_file(str(interlaced)).bandjoin(255).cast("ushort").pngsave(
        str(rgba16), interlace=True, bitdepth=16
    )
    assert render_cost(rgba16) == cost._PIPELINE + math.ceil(1.15 * 8 * W * H)
    assert check_cost(plain) == check_cost(interlaced) == FLOOR  # verified without inflating


def test_heif_and_avif_cost_their_full_size_decode(tmp_path):
    heic = photos.heic(tmp_path / "a.heic", size=(640, 480))
    avif = photos.avif(tmp_path / "a.avif", size=(640, 480))
    assert render_cost(heic) == 16 * cost.MIB + math.ceil(4.6 * 640 * 480)
    assert render_cost(avif) == FLOOR + math.ceil(16.0 * 640 * 480)
    assert check_cost(heic) == check_cost(avif) == FLOOR


def test_webp_lossless_decodes_whole_lossy_scaled(tmp_path):
    picture = photos.picture((4000, 3000))
    picture.save(tmp_path / "lossy.webp", "WEBP", quality=80)
    picture.save(tmp_path / "lossless.webp", "WEBP", lossless=True, method=0)
    assert render_cost(tmp_path / "lossless.webp") == cost._PIPELINE + math.ceil(
        1.15 * 4 * 4000 * 3000
    )
    assert render_cost(tmp_path / "lossy.webp") < render_cost(tmp_path / "lossless.webp")


def test_tiff_streams_and_a_camera_raw_costs_a_development(tmp_path):
    tiff = photos.tiff(tmp_path / "plain.tif", size=(W, H))
    assert render_cost(tiff) == cost._STREAM + math.ceil(0.75 * W * H)
    for make in (photos.dng, photos.nef, photos.arw):
        raw = make(tmp_path / f"raw-{make.__name__}", size=(600, 400))
        assert render_cost(raw) == FLOOR + math.ceil(4.5 * 600 * 400), make.__name__


def test_a_raw_without_tiff_directories_is_sized_by_its_bytes(tmp_path):
    cr3 = photos.cr3(tmp_path / "a.cr3")
    pixels = math.ceil(1.5 * cr3.stat().st_size)
    assert render_cost(cr3) == FLOOR + math.ceil(4.5 * pixels)


def test_a_video_costs_constants(tmp_path):
    clip = videos.h264_mp4(tmp_path / "clip.mp4")
    assert render_cost(clip) == cost._VIDEO
    assert check_cost(clip) == cost._VIDEO_PROBE


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def cut_in_header(path: Path) -> Path:
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b"\xff\xc0") + 6])  # within the frame header
    return path


@pytest.mark.parametrize(
    "make",
    [
        lambda p: photos.empty(p / "empty.jpg"),
        lambda p: photos.text_as_jpeg(p / "text.jpg"),
        lambda p: cut_in_header(photos.jpeg(p / "cut.jpg")),
        lambda p: p / "missing.jpg",
        lambda p: photos.bomb(p / "bomb.png"),  # refused before any decode
        lambda p: fifo(p / "fifo.jpg"),  # not opened: nobody writes to it
        lambda p: p,  # a folder
    ],
    ids=["empty", "text", "truncated", "missing", "bomb", "fifo", "folder"],
)
def test_what_cannot_be_decoded_costs_the_floor(tmp_path, make):
    path: Path = make(tmp_path)
    assert render_cost(path) == check_cost(path) == FLOOR
