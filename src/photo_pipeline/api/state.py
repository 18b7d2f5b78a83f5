"""What the routes share, kept on ``app.state``."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from photo_pipeline.api.auth import TokenAuth
from photo_pipeline.api.hub import EventHub
from photo_pipeline.api.server import ConnectionLimits
from photo_pipeline.pipeline.library import Library


@dataclass
class ApiState:
    library: Library
    auth: TokenAuth
    hub: EventHub
    limits: ConnectionLimits


def api_state(request: Request) -> ApiState:
    state: ApiState = request.app.state.api  # set by api.app (Starlette's State is untyped)
    return state
