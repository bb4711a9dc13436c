"""nczarr's S3 clients send a User-Agent built once and parse response timestamps with
the standard library (``nczarr/maps/s3requests.py``), giving what botocore gives:
the requests as moto's server on 127.0.0.1 receives them, the timestamps against
botocore's own parser over generated dates.
"""

from __future__ import annotations

import datetime
import uuid
from email.utils import format_datetime
from typing import Any

import pytest
from botocore.utils import parse_timestamp as botocore_parse
from dateutil.tz import tzutc
from hypothesis import given, settings
from hypothesis import strategies as st

from nczarr.maps.s3 import S3Map
from nczarr.maps.s3requests import parse_timestamp
from nczarr.maps.s3session import new_session

moments = st.datetimes(
    min_value=datetime.datetime(1971, 1, 1), max_value=datetime.datetime(2200, 1, 1)
).map(lambda d: d.replace(tzinfo=datetime.UTC))


@pytest.fixture
def url(s3_bucket: str) -> str:
    return f"s3://{s3_bucket}/r{uuid.uuid4().hex[:6]}"


def _user_agents(m: S3Map) -> list[str]:
    """The User-Agent of every request ``m``'s client sends from now on."""
    seen: list[str] = []

    def hook(request: Any, **_: Any) -> None:
        agent = request.headers.get("User-Agent", b"")
        seen.append(agent.decode() if isinstance(agent, bytes) else agent)

    m.fs.s3.meta.events.register("before-send.s3", hook)
    return seen


def _same(ours: Any, theirs: Any) -> None:
    """The same instant and offset (botocore's zone object for "Z" is dateutil's
    ``tzlocal`` on a machine whose zone is UTC, ``tzutc`` elsewhere)."""
    assert ours == theirs
    assert ours.utcoffset() == theirs.utcoffset()


@settings(max_examples=200, deadline=None)
@given(moments)
def test_http_dates_parse_as_botocore_parses_them(moment: datetime.datetime) -> None:
    text = format_datetime(moment.replace(microsecond=0), usegmt=True)
    _same(parse_timestamp(text), botocore_parse(text))


@settings(max_examples=200, deadline=None)
@given(moments, st.sampled_from(["Z", "+00:00", ".000Z", "+0000"]))
def test_iso_dates_parse_as_botocore_parses_them(moment: datetime.datetime, zone: str) -> None:
    text = moment.strftime("%Y-%m-%dT%H:%M:%S") + zone
    _same(parse_timestamp(text), botocore_parse(text))


@pytest.mark.parametrize(
    "value",
    [
        "2026-11-26T09:25:57.123456+02:00",  # another offset
        "2026-11-26T09:25:57",  # no zone: botocore's local time
        "Thu, 26 Nov 2026 09:25:57 -0000",  # "unknown" zone
        "Thursday, 26-Nov-26 09:25:57 GMT",  # RFC 850
        1764149157,
        "1764149157",
    ],
)
def test_other_forms_go_to_botocore(value: Any) -> None:
    _same(parse_timestamp(value), botocore_parse(value))


def test_what_botocore_refuses_is_refused_as_botocore_does() -> None:
    with pytest.raises(ValueError) as theirs:
        botocore_parse("not a date")
    with pytest.raises(type(theirs.value)):
        parse_timestamp("not a date")


def test_a_session_nczarr_builds_parses_with_the_fast_parser() -> None:
    factory = new_session(None).get_component("response_parser_factory")
    assert factory._defaults["timestamp_parser"] is parse_timestamp


def test_requests_name_nczarr_in_a_user_agent_built_once(url: str, s3_endpoint: str) -> None:
    with S3Map(url, mode="w", endpoint_url=s3_endpoint) as m:
        agents = _user_agents(m)
        m["a"] = b"1"
        assert m["a"] == b"1"
        info = m.fs.info(m._full("a"))
    assert len(agents) == 3 and len(set(agents)) == 1
    assert agents[0].startswith("nczarr/") and "otocore/" in agents[0]
    assert info["LastModified"].tzinfo == tzutc()


@pytest.mark.parametrize("option", ["user_agent_appid", "user_agent"])
def test_a_user_agent_the_user_configures_is_theirs(
    url: str, s3_endpoint: str, option: str
) -> None:
    with S3Map(url, mode="w", endpoint_url=s3_endpoint, config_kwargs={option: "mine-1"}) as m:
        agents = _user_agents(m)
        m["a"] = b"1"
    assert not agents[0].startswith("nczarr/")
    assert ("app/mine-1" if option == "user_agent_appid" else "mine-1") in agents[0]


def test_last_modified_equals_botocores_reading(url: str, s3_endpoint: str) -> None:
    with S3Map(url, mode="w", endpoint_url=s3_endpoint) as m:
        m["a"] = b"1"
        ours = m.fs.info(m._full("a"))["LastModified"]
        listed = m.fs.ls(m._full(""), detail=True)[0]["LastModified"]
    theirs = S3Map(url, mode="r", endpoint_url=s3_endpoint, session=_plain_session())
    head = theirs.fs.info(theirs._full("a"))["LastModified"]
    _same(ours, head)
    _same(listed, head)


def _plain_session() -> Any:
    from aiobotocore.session import AioSession

    return AioSession()
