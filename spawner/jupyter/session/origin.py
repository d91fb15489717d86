"""Whether a request comes from a page of the session's own origin (TensorBoard's and the apps' POSTs)."""

from __future__ import annotations

from urllib.parse import urlparse


def same_origin(headers) -> bool:
    """The request comes from a page of this very origin (Origin, else Referer, names this Host)."""
    source = headers.get("Origin") or headers.get("Referer") or ""
    host = headers.get("Host", "")
    return bool(host) and source not in ("", "null") and urlparse(source).netloc == host
