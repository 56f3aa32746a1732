"""The HTTP service: `edgewise serve` (FastAPI) over the same episode runner as every command."""

from edgewise.service.app import create_app

__all__ = ["create_app"]
