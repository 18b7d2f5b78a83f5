"""The photo job types are named with the module that runs each, and a module is
imported only when a job of its type runs (each check in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from photo_pipeline.pipeline.job_types import PROVIDERS

DECODERS = ("pyvips", "rawpy", "av", "pillow_heif", "numpy")


def fresh(code: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_each_job_type_is_run_by_the_module_named_for_it():
    found = fresh(
        """
        import json
        from photo_pipeline.jobs.handlers import registry
        import photo_pipeline.pipeline.job_types as job_types
        print(json.dumps({t: registry.get(t).__module__ for t in job_types.PROVIDERS}))
        """
    )
    assert found == PROVIDERS


def test_a_worker_of_organize_loads_no_decoder_until_a_scan_runs():
    loaded = fresh(
        f"""
        import json, sys
        from photo_pipeline.jobs.handlers import registry
        import photo_pipeline.pipeline.job_types
        decoders = {DECODERS!r}
        named = sorted(registry.job_types())
        registry.get("organize")
        registry.get("organize.undo")
        after_organize = sorted(m for m in decoders if m in sys.modules)
        registry.get("scan")
        after_scan = sorted(m for m in decoders if m in sys.modules)
        print(json.dumps([named, after_organize, after_scan]))
        """
    )
    named, after_organize, after_scan = loaded
    assert set(PROVIDERS) <= set(named)
    assert after_organize == []
    assert {"pyvips", "numpy"} <= set(after_scan)  # the check sees an import when one happens
