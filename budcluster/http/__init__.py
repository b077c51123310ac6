"""The HTTP face of the service: the ASGI app (app.py), the GraphQL view (view.py), the guards
every request passes (guards.py), WebSocket sessions by token (sessions.py), and serving it all
with uvicorn (server.py)."""

from budcluster.http.app import create_app

__all__ = ["create_app"]
