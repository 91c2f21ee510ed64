"""One router per resource, each mounted under ``/v1`` by :func:`anchorgpu.api.app.create_app`."""
