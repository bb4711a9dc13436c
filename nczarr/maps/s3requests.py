"""What nczarr's own S3 clients leave out of botocore's work on every request.

Past the network, an S3 request costs the client ~2.5-5 ms of CPU in botocore and
aiobotocore here (``benchmarks/engine.py --where s3``): a chunk is one GET, so on a
store of 4 MB chunks this is a good part of a read. Two pieces of it are work whose
result never changes within a client, and are done once here instead:

* **The User-Agent.** botocore rebuilds the header for every request from about
  twenty components, each sanitized (~0.6 ms a request here). A client whose config
  names a ``user_agent`` sends that string as it is (botocore's documented
  override, followed by the session's extras), so nczarr's clients name nczarr and
  the botocore version once, unless the user's ``config_kwargs`` set ``user_agent``
  or ``user_agent_appid`` (then theirs, as botocore builds it).
* **Timestamps.** S3 answers with RFC 7231 dates in headers (``Last-Modified`` of
  every GET and HEAD) and ISO 8601 in XML (listings); botocore parses every one with
  dateutil's general-purpose parser (~0.8 ms a GET here).
  :func:`parse_timestamp` reads those two forms with the standard library and gives
  the same value botocore's does (an aware datetime in dateutil's ``tzutc``); any
  other form goes to botocore's own parser. Installed through botocore's documented
  ``response_parser_factory`` component on the sessions nczarr builds
  (:func:`~nczarr.maps.s3session.new_session`), never on a session the user passes.

The body's checksum (botocore's CRC check of each response) is left on: it is the
body's integrity check, and the cost is per byte, the same in every S3 client.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

__all__ = ["parse_timestamp", "install_timestamp_parser", "user_agent_config"]

#: Config keys of the user's that make botocore build the User-Agent itself.
_USER_AGENT_KEYS = ("user_agent", "user_agent_appid")


def user_agent_config(user_config: Mapping[str, Any]) -> dict[str, str]:
    """``{"user_agent": ...}`` for a client's config, or nothing where the user's
    ``config_kwargs`` already say how the User-Agent is made."""
    if any(user_config.get(k) is not None for k in _USER_AGENT_KEYS):
        return {}
    from .._version import __version__

    return {"user_agent": f"nczarr/{__version__}"}  # + botocore's own extras


def parse_timestamp(value: Any) -> Any:
    """A timestamp of an S3 response as botocore parses it, read with the standard
    library for the two forms S3 sends (HTTP dates, ISO 8601 in UTC)."""
    if isinstance(value, str):
        try:
            if value[:1].isdigit():
                parsed = datetime.datetime.fromisoformat(value)
            else:
                parsed = parsedate_to_datetime(value)
        except (ValueError, TypeError, IndexError):
            parsed = None
        if parsed is not None and parsed.utcoffset() == datetime.timedelta(0):
            from dateutil.tz import tzutc

            return parsed.replace(tzinfo=tzutc())
    from botocore.utils import parse_timestamp as botocore_parse

    return botocore_parse(value)


def install_timestamp_parser(session: Any) -> None:
    """Make ``session``'s clients parse response timestamps with
    :func:`parse_timestamp`."""
    factory = session.get_component("response_parser_factory")
    factory.set_parser_defaults(timestamp_parser=parse_timestamp)
