"""The local web viewer (``ctxmode ui``): browse and correct one project's store in a browser.

``create_app`` builds the ASGI app over a store file; ``serve`` runs it with uvicorn on
127.0.0.1. Templates and static files ship inside this package; nothing is fetched at run time.

May import: the core packages and the ``store`` facade; never another face.
"""

from ctxmode.web.app import create_app, serve

__all__ = ["create_app", "serve"]
