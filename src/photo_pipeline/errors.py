"""The project's root exception: every domain error carries a stable ``code``."""

from __future__ import annotations


class PhotoPipelineError(Exception):
    """Root of every error photo-pipeline raises on purpose.

    ``code`` is stable and machine-readable (API problem+json, CLI ``--json``);
    ``status`` is the HTTP status the API maps it to.
    """

    code: str = "error"
    status: int = 500

    def __init__(self, code: str | None = None, detail: str = "", **extra: object) -> None:
        if code is not None:
            self.code = code
        self.detail = detail
        # Machine-readable facts for API clients (e.g. the job holding a lock).
        self.extra = extra
        super().__init__(f"{self.code}: {detail}" if detail else self.code)
