"""The live schedule page at ``/schedule``: static files shipped in the package.

The page is built from ``web/src/schedule`` with npm (``cd web && npm ci && npm run build``);
its bundle is committed here, so running budcluster needs no Node.js, no CDN and no build
step. ``tests/test_web_contract.py`` rebuilds it into a temporary folder and fails when the
committed files differ from what the sources give.
"""

from pathlib import Path

from budcluster.package_data import read_once

__all__ = ["ASSETS_DIRECTORY", "page_html"]

_PACKAGE_DIRECTORY: Path = Path(__file__).resolve().parent

ASSETS_DIRECTORY: Path = _PACKAGE_DIRECTORY / "assets"
"""The bundle (script, styles and licences), mounted at ``/schedule/assets``."""


page_html = read_once(_PACKAGE_DIRECTORY / "index.html")
"""The page's HTML."""
