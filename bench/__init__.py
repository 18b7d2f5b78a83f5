"""Benchmark scripts (never timed unit tests). Run each from the repository root as a
module, e.g. ``.venv/bin/python -m bench.coordinator --help``: the root is then on
``sys.path``, so the scripts import the shared harness (``bench._harness``: rounds in
turns, ratios, the report and ``--json``), their helpers (``bench._*``) and the test
factories (``tests.factories``) without touching ``sys.path``."""
