"""Hypothesis fuzzing of everything a user or a store can feed nczarr (issue 8).

* URLs: any text gives an ``NCZarrURL`` or an ``NCZarrError``; a password in a URL
  never appears in an error message or a repr, whatever characters it holds.
* Metadata: every object kind (``.zgroup``, ``.zarray``, ``.zattrs``, ``.zmetadata``,
  ``zarr.json``, NCZarr V1 objects, and the NCZarr keys inside ``.zattrs``) of real
  stores, replaced by arbitrary bytes, arbitrary JSON, hostile JSON (huge integers,
  deep nesting) or mutated in place, gives a dataset (``read``, ``convert``) or an
  ``NCZarrError`` -- never another exception, never a hang.

Example counts are modest by default; ``NCZARR_FUZZ_EXAMPLES=<n>`` runs ``n`` per test.
The searches are marked ``generated``: ``NCZARR_GENERATED_BUDGET`` scales their default
counts (``tests/budget.py``).
"""

from __future__ import annotations

import json
import os
import signal
import string
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import nczarr
from nczarr.errors import InvalidURLError, NCZarrError
from nczarr.maps.credentials import redact, redact_text
from nczarr.maps.memory import MemoryMap
from nczarr.maps.url import parse_url

from .budget import examples
from .ncoracle import JSON_VALUES, corrupt_metadata, map_from_zip

EXAMPLES = int(os.environ.get("NCZARR_FUZZ_EXAMPLES", "0")) or None
DATA = Path(__file__).parent / "data"


def fuzz_settings(default: int) -> Callable:
    chosen = settings(
        max_examples=EXAMPLES or examples(default),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    return lambda test: pytest.mark.generated(chosen(test))


@contextmanager
def no_hang(seconds: int = 20) -> Iterator[None]:
    """Fail (instead of hanging the suite) if the body runs longer than ``seconds``."""

    def expired(signum: int, frame: Any) -> None:
        raise AssertionError(f"no result after {seconds} s: a hang")

    if not hasattr(signal, "SIGALRM"):  # pragma: no cover - Windows
        yield
        return
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ===================================================================== URLs
URL_CHARS = string.ascii_letters + string.digits + ":/?#@&=%.,_-+~[]! \\'\"" + "\x00\x7féü"
SCHEMES = st.sampled_from(
    ["file", "s3", "http", "https", "gs", "memory", "zip", "FILE", "S3", "ftp", "x-y"]
)
HOSTS = st.sampled_from(
    [
        "",
        "localhost",
        "bucket",
        "127.0.0.1:9000",
        "[::1]:80",
        "s3.us-west-2.amazonaws.com",
        "b.s3.amazonaws.com",
        "h:0",
        "h:99999",
        "storage.googleapis.com",
        "a..b",
    ]
)
FRAGMENTS = st.sampled_from(
    [
        "",
        "#mode=nczarr,file",
        "#mode=zarr,zip",
        "#mode=s3",
        "#s3",
        "#mode=zarr,s3,v3",
        "#mode=xarray,noxarray",
        "#mode=bytes",
        "#aws.region=x&aws.region=y",
        "#log&show=fetch",
        "#mode=file,zip",
        "#=x",
        "#%zz",
    ]
)


@st.composite
def urls(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return draw(st.text(alphabet=URL_CHARS, max_size=60))
    path = draw(st.text(alphabet=URL_CHARS, max_size=25))
    return f"{draw(SCHEMES)}://{draw(HOSTS)}/{path}{draw(FRAGMENTS)}"


@fuzz_settings(400)
@given(urls())
def test_any_url_gives_a_value_or_an_nczarr_error(url):
    with no_hang():
        try:
            parsed = parse_url(url)
        except NCZarrError:
            return
    assert parse_url(str(parsed)) == parsed
    repr(parsed)


SECRET_CHARS = string.ascii_letters + string.digits + "#?/@:%&=+!$,;~[]"


@st.composite
def urls_with_secrets(draw: st.DrawFn) -> tuple[str, str]:
    lead = draw(st.sampled_from(["Zq", "Q", "7", "1234"]))
    secret = lead + draw(st.text(alphabet=SECRET_CHARS, min_size=4, max_size=16))
    # Documented limit: a password of digits, then '/' or '?', then '#' reads as
    # host:port/path#fragment (docs/reliability.md).
    assume(not (lead[0].isdigit() and "#" in secret))
    user = draw(st.sampled_from(["", "user", "AKIA123", "a.b"]))
    scheme = draw(SCHEMES)
    host = draw(HOSTS)
    path = draw(st.text(alphabet=string.ascii_letters + "/._-@", max_size=15))
    prefix = draw(st.sampled_from(["", "simplecache::", "zip::"]))
    return f"{prefix}{scheme}://{user}:{secret}@{host}/{path}{draw(FRAGMENTS)}", secret


@fuzz_settings(400)
@given(urls_with_secrets())
def test_a_password_in_a_url_is_never_shown(case):
    url, secret = case
    assert secret not in redact(url)
    assert secret not in redact_text(f"could not open {url!r}: failed")
    with pytest.raises(InvalidURLError) as info:
        parse_url(url)
    assert secret not in str(info.value)
    assert secret not in repr(info.value)


# ===================================================================== metadata
def _v3_store() -> dict[str, bytes]:
    array = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [4, 6],
        "data_type": "int16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "fill_value": -1,
        "attributes": {"units": "m", "_FillValue": -1},
        "dimension_names": ["y", "x"],
    }
    return {
        "zarr.json": json.dumps(
            {"zarr_format": 3, "node_type": "group", "attributes": {"title": "t"}}
        ).encode(),
        "g/zarr.json": b'{"zarr_format": 3, "node_type": "group"}',
        "g/v/zarr.json": json.dumps(array).encode(),
        "g/v/c/0/0": bytes(12),
    }


def _consolidated_store() -> dict[str, bytes]:
    zarray = {
        "zarr_format": 2,
        "shape": [4],
        "chunks": [2],
        "dtype": "<f4",
        "compressor": None,
        "fill_value": "NaN",
        "order": "C",
        "filters": None,
    }
    zattrs = {"_ARRAY_DIMENSIONS": ["x"], "units": "K"}
    meta = {
        ".zgroup": {"zarr_format": 2},
        ".zattrs": {"title": "c"},
        "v/.zarray": zarray,
        "v/.zattrs": zattrs,
    }
    out = {k: json.dumps(v).encode() for k, v in meta.items()}
    out[".zmetadata"] = json.dumps({"metadata": meta, "zarr_consolidated_format": 1}).encode()
    out["v/0"] = bytes(8)
    return out


def _bases() -> dict[str, dict[str, bytes]]:
    out = {}
    for name in ("current_netcdf4101.zip", "ref_oldformat_v1.zip", "ref_oldkeys.file.zip"):
        with map_from_zip(DATA / name) as zmap:
            out[name] = {k: zmap[k] for k in zmap}
    out["zarr3"] = _v3_store()
    out["consolidated"] = _consolidated_store()
    return out


BASES = _bases()
#: Every metadata object of every base store: (base, key).
OBJECTS = sorted(
    (base, key)
    for base, content in BASES.items()
    for key in content
    if key.rsplit("/", 1)[-1].startswith((".z", ".ncz")) or key.endswith("zarr.json")
)
#: The NCZarr keys that live inside .zattrs / .zarray / .zgroup.
NCZARR_KEYS = (
    "_nczarr_superblock",
    "_nczarr_group",
    "_nczarr_array",
    "_nczarr_attr",
    "_ARRAY_DIMENSIONS",
    "_FillValue",
)

HOSTILE_VALUES = (
    b"",
    b"\xff\xfe",
    b"{",
    b"[" * 5000,
    b'{"a": ' + b"9" * 4400 + b"}",
    b'{"a": ' + b"[" * 500 + b"]" * 500 + b"}",
    b'{"a": ' + b'{"b":' * 990 + b"1" + b"}" * 991,
    b"NaN",
    b'"text"',
    b"null",
    b"1e999999",
    b'{"zarr_format": 2, "shape": [1e308], "chunks": [1]}',
)
HOSTILE = st.sampled_from(HOSTILE_VALUES)


def _check(content: dict[str, bytes]) -> None:
    """read and convert (both formats) give a value or an NCZarrError."""
    with no_hang(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            nczarr.read(MemoryMap(dict(content), mode="r"))
        except NCZarrError:
            return
        for fmt in ("zarr", "nczarr"):
            with suppress(NCZarrError):
                nczarr.convert(MemoryMap(dict(content), mode="r"), MemoryMap(), mode=fmt)


def replaced_object(data: st.DataObject) -> dict[str, bytes]:
    """A base store with one metadata object replaced by bytes, any JSON or a hostile value."""
    base, key = data.draw(st.sampled_from(OBJECTS))
    content = dict(BASES[base])
    choice = data.draw(st.integers(0, 2))
    if choice == 0:
        content[key] = data.draw(st.binary(max_size=64))
    elif choice == 1:
        content[key] = json.dumps(data.draw(JSON_VALUES)).encode()
    else:
        content[key] = data.draw(HOSTILE)
    return content


@fuzz_settings(300)
@given(st.data())
def test_any_object_replaced_by_anything(data):
    content = replaced_object(data)
    _check(content)


def _parsed(content: dict[str, bytes]) -> dict[str, Any]:
    return {
        k: json.loads(v)
        for k, v in content.items()
        if k.rsplit("/", 1)[-1].startswith((".z", ".ncz")) or k.endswith("zarr.json")
    }


PARSED = {base: _parsed(content) for base, content in BASES.items()}


@fuzz_settings(300)
@given(st.data())
def test_any_value_inside_any_object_mutated(data):
    base = data.draw(st.sampled_from(sorted(BASES)))
    mutated = corrupt_metadata(data, PARSED[base])
    content = dict(BASES[base])
    content.update({k: json.dumps(v).encode() for k, v in mutated.items()})
    _check(content)


@fuzz_settings(200)
@given(st.data())
def test_nczarr_keys_inside_attributes_set_to_anything(data):
    base = data.draw(st.sampled_from(["current_netcdf4101.zip", "ref_oldkeys.file.zip"]))
    parsed = PARSED[base]
    key = data.draw(st.sampled_from(sorted(k for k in parsed if isinstance(parsed[k], dict))))
    doc = dict(parsed[key])
    doc[data.draw(st.sampled_from(NCZARR_KEYS))] = data.draw(JSON_VALUES)
    content = dict(BASES[base])
    content[key] = json.dumps(doc).encode()
    _check(content)


@pytest.mark.parametrize(("base", "key"), OBJECTS)
def test_every_object_kind_hostile(base, key):
    """Each object of each store, deterministically replaced by each hostile input."""
    for value in HOSTILE_VALUES:
        content = dict(BASES[base])
        content[key] = value
        _check(content)


@pytest.mark.parametrize("base", sorted(BASES))
def test_every_base_store_is_valid(base):
    """The fuzzers start from stores that read and convert cleanly."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset = nczarr.read(MemoryMap(dict(BASES[base]), mode="r"))
        assert list(dataset.root.all_variables())
        for fmt in ("zarr", "nczarr"):
            report = nczarr.convert(MemoryMap(dict(BASES[base]), mode="r"), MemoryMap(), mode=fmt)
            assert report.arrays >= 1
