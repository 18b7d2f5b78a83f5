"""Limits on what the media layer decodes (a module of its own: cheap to import)."""

# Larger originals fail with ``too_many_pixels`` before any decode (a decompression
# bomb, or a panorama beyond what a worker's memory allows).
DEFAULT_MAX_PIXELS: int = 200_000_000
