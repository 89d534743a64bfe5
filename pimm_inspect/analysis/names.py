"""The one text of names (``pimm_inspect.names``), for the analysis modules and the surfaces that import it from here.

It lives at the package root, below every layer, so a surface that needs only it (a cached ``show --json``
document's path, ``report.safe_text``) does not import the analysis package and its checks."""

from __future__ import annotations

from ..names import encodable_text as encodable_text, name_text as name_text
