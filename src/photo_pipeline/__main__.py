"""``python -m photo_pipeline`` = the ``photo-pipeline`` command."""

from photo_pipeline.cli import main

main()
