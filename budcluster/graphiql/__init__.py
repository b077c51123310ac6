"""The GraphiQL IDE page and its vendored browser assets, served from local files.

budcluster's users may run it where there is no internet access, and the
architecture forbids loading the IDE's scripts from a CDN, so the GraphiQL,
React, ReactDOM and graphql-ws browser bundles (exact copies of the minified
UMD builds published on the npm registry, each with its LICENSE file beside
it) live in the ``assets`` folder next to this module and ship as package
data. The page loads them from ``/graphiql/assets/``, sends queries to
``/graphql`` over HTTP and subscriptions over graphql-transport-ws at the same
path, and forwards the headers typed in the IDE (``Authorization: Bearer
<token>``) on both, the latter as the WebSocket's connectionParams.
"""

from pathlib import Path

from budcluster.package_data import read_once

__all__ = ["ASSETS_DIRECTORY", "page_html"]

_PACKAGE_DIRECTORY: Path = Path(__file__).resolve().parent

ASSETS_DIRECTORY: Path = _PACKAGE_DIRECTORY / "assets"
"""Folder holding the vendored bundles, to mount at ``/graphiql/assets``."""


page_html = read_once(_PACKAGE_DIRECTORY / "page.html")
"""The GraphiQL page's HTML."""
