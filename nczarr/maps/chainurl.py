"""Whether a location is a chained URL (``zip::s3://bucket/data.zip``). Pure.

Apart from :mod:`nczarr.maps.chained` so that asking costs a regular expression, not
the import of the fsspec and zip backends (asyncio, zipfile: tens of milliseconds a
command that never opens a chained URL).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["CHAIN", "is_chained"]

#: ``protocol::inner URL``; group 1 the protocol, group 2 the inner URL.
CHAIN = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)::(.+)$", re.S)


def is_chained(url: Any) -> bool:
    """Whether ``url`` is a chained URL (``proto::inner``)."""
    return isinstance(url, str) and CHAIN.match(url) is not None
