"""parse_url / NCZarrURL: every accepted form, every error, and the str() round trip."""

from __future__ import annotations

import doctest
import os
import pathlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

import nczarr.maps.url
from nczarr.errors import InvalidURLError, NCZarrError
from nczarr.maps.url import MODE_WORDS, NCZarrURL, parse_url

F = frozenset

# url -> (storage, path, bucket, endpoint, region, mode, params)
ACCEPTED = [
    # local directory trees and zip archives
    (
        "file:///data/ds.file#mode=nczarr,file",
        ("file", "/data/ds.file", None, None, None, {"nczarr", "file"}, {}),
    ),
    (
        "file://localhost/data/ds.file#mode=zarr",
        ("file", "/data/ds.file", None, None, None, {"nczarr", "zarr", "file"}, {}),
    ),
    (
        "file:///data/ds.zip#mode=nczarr,zip",
        ("zip", "/data/ds.zip", None, None, None, {"nczarr", "zip"}, {}),
    ),
    ("file:///data/ds.anyext#mode=zip", ("zip", "/data/ds.anyext", None, None, None, {"zip"}, {})),
    ("file:///data/ds.ZIP", ("zip", "/data/ds.ZIP", None, None, None, {"zip"}, {})),
    ("file:///data/ds.zip#mode=file", ("file", "/data/ds.zip", None, None, None, {"file"}, {})),
    ("file:///data/a/../b/./ds/", ("file", "/data/b/ds", None, None, None, {"file"}, {})),
    ("file:///data/a%20b/%23c", ("file", "/data/a b/#c", None, None, None, {"file"}, {})),
    (
        "FILE:///data/x#MODE=NCZarr,File",
        ("file", "/data/x", None, None, None, {"nczarr", "file"}, {}),
    ),
    ("/abs/ds.zarr", ("file", "/abs/ds.zarr", None, None, None, {"file"}, {})),
    ("/abs/ds.zarr.zip", ("zip", "/abs/ds.zarr.zip", None, None, None, {"zip"}, {})),
    (
        "/abs/ds#mode=zarr,consolidated",
        ("file", "/abs/ds", None, None, None, {"nczarr", "zarr", "file", "consolidated"}, {}),
    ),
    # s3 scheme
    (
        "s3://bucket/root/ds#mode=nczarr",
        ("s3", "root/ds", "bucket", None, None, {"nczarr", "s3"}, {}),
    ),
    ("s3://bucket", ("s3", "", "bucket", None, None, {"s3"}, {})),
    ("s3://bucket/", ("s3", "", "bucket", None, None, {"s3"}, {})),
    ("s3://My_Legacy.Bucket/k/", ("s3", "k", "My_Legacy.Bucket", None, None, {"s3"}, {})),
    ("s3://bucket/a%20b", ("s3", "a b", "bucket", None, None, {"s3"}, {})),
    (
        "s3://datasetbucket/rootkey#mode=nczarr&awsprofile=unidata",
        ("s3", "rootkey", "datasetbucket", None, None, {"nczarr", "s3"}, {"awsprofile": "unidata"}),
    ),
    (
        "s3://bucket/k#mode=zarr&aws.region=eu-west-1&AWS.Profile=Dev",
        (
            "s3",
            "k",
            "bucket",
            None,
            "eu-west-1",
            {"nczarr", "zarr", "s3"},
            {"aws.region": "eu-west-1", "aws.profile": "Dev"},
        ),
    ),
    # netcdf-c's documented example: the AWS host written after s3://
    (
        "s3://s3.us-west-1.amazonaws.com/datasetbucket",
        ("s3", "", "datasetbucket", None, "us-west-1", {"s3"}, {"aws.region": "us-west-1"}),
    ),
    # AWS path style
    (
        "https://s3.us-west-2.amazonaws.com/bucket/root/ds#mode=nczarr,s3",
        (
            "s3",
            "root/ds",
            "bucket",
            None,
            "us-west-2",
            {"nczarr", "s3"},
            {"aws.region": "us-west-2"},
        ),
    ),
    (
        "https://s3.amazonaws.com/bucket/root/ds",
        ("s3", "root/ds", "bucket", None, None, {"s3"}, {}),
    ),
    (
        "https://s3-eu-west-1.amazonaws.com/bucket/k",
        ("s3", "k", "bucket", None, "eu-west-1", {"s3"}, {"aws.region": "eu-west-1"}),
    ),
    (
        "https://s3.amazonaws.com/bucket/k#aws.region=ap-south-1",
        ("s3", "k", "bucket", None, "ap-south-1", {"s3"}, {"aws.region": "ap-south-1"}),
    ),
    # AWS virtual-host style
    (
        "https://bucket.s3.us-west-2.amazonaws.com/root/ds",
        ("s3", "root/ds", "bucket", None, "us-west-2", {"s3"}, {"aws.region": "us-west-2"}),
    ),
    (
        "https://bucket.s3.amazonaws.com/root/ds#mode=zarr",
        ("s3", "root/ds", "bucket", None, None, {"nczarr", "zarr", "s3"}, {}),
    ),
    (
        "https://my.dotted.bucket.s3.eu-central-1.amazonaws.com/k",
        (
            "s3",
            "k",
            "my.dotted.bucket",
            None,
            "eu-central-1",
            {"s3"},
            {"aws.region": "eu-central-1"},
        ),
    ),
    ("https://x.s3.s3.amazonaws.com/k", ("s3", "k", "x.s3", None, None, {"s3"}, {})),
    # a bucket named like a virtual host is a bucket; one named like an S3 host
    # reads as netcdf-c's host form after s3://, so str() writes it path style
    (
        "s3://nczarr.s3.eu-west-1.amazonaws.com/k",
        ("s3", "k", "nczarr.s3.eu-west-1.amazonaws.com", None, None, {"s3"}, {}),
    ),
    (
        "https://s3.amazonaws.com/s3.eu-west-1.amazonaws.com/k",
        ("s3", "k", "s3.eu-west-1.amazonaws.com", None, None, {"s3"}, {}),
    ),
    # S3-compatible endpoints (path style, need the s3 mode word)
    (
        "http://127.0.0.1:9000/bucket/key#mode=nczarr,s3",
        ("s3", "key", "bucket", "http://127.0.0.1:9000", None, {"nczarr", "s3"}, {}),
    ),
    (
        "https://MinIO.example.org/bkt/a/b#s3&aws.region=garage",
        (
            "s3",
            "a/b",
            "bkt",
            "https://minio.example.org",
            "garage",
            {"nczarr", "s3"},
            {"aws.region": "garage"},
        ),
    ),
    ("http://[::1]:9000/bkt#mode=s3", ("s3", "", "bkt", "http://[::1]:9000", None, {"s3"}, {})),
    (
        "https://storage.googleapis.com/bucket/key",
        ("s3", "key", "bucket", "https://storage.googleapis.com", None, {"s3"}, {}),
    ),
    # other fsspec protocols
    (
        "http://example.com/data/ds.zarr?x=1",
        ("http", "example.com/data/ds.zarr?x=1", None, None, None, set(), {}),
    ),
    (
        "https://example.com/ds.zarr#mode=zarr",
        ("https", "example.com/ds.zarr", None, None, None, {"nczarr", "zarr"}, {}),
    ),
    (
        "gs://bucket/ds.zarr#xarray",
        ("gs", "bucket/ds.zarr", None, None, None, {"nczarr", "zarr", "xarray"}, {}),
    ),
    ("az://container/ds", ("az", "container/ds", None, None, None, set(), {})),
    ("memory://root/ds#log", ("memory", "root/ds", None, None, None, set(), {"log": ""})),
]


@pytest.mark.parametrize(("url", "expected"), ACCEPTED, ids=[u for u, _ in ACCEPTED])
def test_accepted_forms(url: str, expected: tuple) -> None:
    storage, path, bucket, endpoint, region, mode, params = expected
    parsed = parse_url(url)
    assert parsed.storage == storage
    assert parsed.path == path
    assert parsed.bucket == bucket
    assert parsed.endpoint == endpoint
    assert parsed.region == region
    assert parsed.mode == F(mode)
    assert dict(parsed.params) == params
    assert parse_url(str(parsed)) == parsed
    assert str(parse_url(str(parsed))) == str(parsed)


def test_relative_path_is_made_absolute(tmp_path: pathlib.Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert parse_url("sub/ds.zarr").path == str(tmp_path / "sub" / "ds.zarr")
    assert parse_url("ds.zip").storage == "zip"


def test_pathlike_is_taken_literally(tmp_path: pathlib.Path) -> None:
    odd = tmp_path / "a#mode=zarr"
    parsed = parse_url(odd)
    assert (parsed.storage, parsed.path, parsed.mode) == ("file", str(odd), F({"file"}))
    assert parse_url(str(parsed)) == parsed
    assert parse_url(tmp_path / "x.zip").storage == "zip"


def test_scheme_is_kept_but_not_compared() -> None:
    a = parse_url("https://s3.us-west-2.amazonaws.com/bucket/k")
    b = parse_url("s3://bucket/k#aws.region=us-west-2")
    assert (a.scheme, b.scheme) == ("https", "s3")
    assert a == b and hash(a) == hash(b)
    assert parse_url("/x").scheme is None


@pytest.mark.parametrize(
    ("fragment", "mode", "fmt"),
    [
        ("", set(), None),
        ("#mode=nczarr", {"nczarr"}, "nczarr"),
        ("#mode=zarr", {"nczarr", "zarr"}, "zarr"),
        ("#zarr", {"nczarr", "zarr"}, "zarr"),
        ("#mode=xarray", {"nczarr", "zarr", "xarray"}, "zarr"),
        ("#xarray", {"nczarr", "zarr", "xarray"}, "zarr"),
        ("#mode=noxarray", {"nczarr", "zarr", "noxarray"}, "zarr"),
        ("#noxarray", {"nczarr", "zarr", "noxarray"}, "zarr"),
        ("#mode=xarray,noxarray", {"nczarr", "zarr", "noxarray"}, "zarr"),
        ("#mode=nczarr&mode=zarr", {"nczarr", "zarr"}, "zarr"),
        ("#mode=%20Zarr%20,,v3", {"nczarr", "zarr", "v3"}, "zarr"),
        ("#mode=consolidated,v2", {"consolidated", "v2"}, None),
    ],
)
def test_mode_implications(fragment: str, mode: set[str], fmt: str | None) -> None:
    parsed = parse_url("memory://ds" + fragment)
    assert parsed.mode == F(mode)
    assert parsed.format == fmt


def test_bare_s3_selects_nczarr_like_netcdf_c() -> None:
    assert parse_url("s3://bucket/k#s3").mode == {"s3", "nczarr"}
    assert parse_url("s3://bucket/k#mode=s3").mode == {"s3"}
    # a macro name with "=" is an ordinary parameter
    assert dict(parse_url("memory://x#zarr=").params) == {"zarr": ""}


def test_flags_and_profile() -> None:
    u = parse_url("s3://bucket/k#mode=noxarray,consolidated,v3&aws.profile=p1&awsprofile=p2")
    assert (u.zarr_version, u.consolidated, u.xarray_dimensions) == (3, True, False)
    assert u.profile == "p1"
    assert parse_url("s3://bucket/k#awsprofile=p2").profile == "p2"
    v = parse_url("memory://x#mode=v2")
    assert (v.zarr_version, v.consolidated, v.xarray_dimensions, v.profile) == (
        2,
        False,
        True,
        None,
    )
    assert parse_url("memory://x").zarr_version is None


def test_fragment_keys_case_insensitive_values_decoded_last_wins() -> None:
    u = parse_url("memory://x#Log=A%26B&LOG=c%3Dd&Show=fetch")
    assert dict(u.params) == {"log": "c=d", "show": "fetch"}
    assert str(u) == "memory://x#log=c%3Dd&show=fetch"


def test_fsspec_url_has_no_fragment() -> None:
    assert parse_url("s3://bucket/a b#mode=zarr").fsspec_url == "s3://bucket/a%20b"
    assert parse_url("s3://bucket#mode=zarr").fsspec_url == "s3://bucket"
    assert parse_url("/x/y z.zip#mode=zarr").fsspec_url == "file:///x/y%20z.zip"
    assert parse_url("gs://b/k#zarr").fsspec_url == "gs://b/k"


def test_canonical_str_examples() -> None:
    assert str(parse_url("https://bucket.s3.us-west-2.amazonaws.com/k#mode=zarr")) == (
        "s3://bucket/k#mode=nczarr,zarr,s3&aws.region=us-west-2"
    )
    assert str(parse_url("http://localhost:9000/bkt/k#s3&log")) == (
        "http://localhost:9000/bkt/k#mode=nczarr,s3&log"
    )
    assert str(parse_url("/x/ds#mode=file,zarr")) == "file:///x/ds#mode=nczarr,zarr,file"
    assert f"{parse_url('memory://m')}" == "memory://m"


def test_value_is_frozen_and_hashable() -> None:
    u = parse_url("s3://bucket/k#aws.profile=x")
    with pytest.raises(AttributeError):
        u.path = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        u.params["aws.profile"] = "y"  # type: ignore[index]
    assert {u: 1}[parse_url("s3://bucket/k/#aws.profile=x")] == 1


def test_constructor_normalizes_like_parse() -> None:
    u = NCZarrURL("s3", "/a/b/", bucket="bucket", region="eu-west-1", mode="zarr")
    assert u == parse_url("s3://bucket/a/b#mode=zarr&aws.region=eu-west-1")
    assert u.params == {"aws.region": "eu-west-1"}
    assert NCZarrURL("zip", "/x/../y").mode == {"zip"}
    assert NCZarrURL("memory", "x", params={"LOG": "1"}).params == {"log": "1"}


ERRORS = [
    ("file:///x#mode=zar", "unknown mode word 'zar' in fragment of 'file:///x#mode=zar'"),
    ("s3://b1k/k#mode=bytes", "unknown mode word 'bytes' in fragment of 's3://b1k/k#mode=bytes'"),
    (
        "file:///x#mode=file,s3",
        "conflicting storage words 'file' and 's3' in fragment of 'file:///x#mode=file,s3'",
    ),
    (
        "/x#mode=zip,file",
        "conflicting storage words 'file' and 'zip' in fragment of '/x#mode=zip,file'",
    ),
    (
        "file:///x#mode=v2,v3",
        "conflicting mode words 'v2' and 'v3' in fragment of 'file:///x#mode=v2,v3'",
    ),
    (
        "file:///x#mode=s3",
        "storage word 's3' needs an s3:// or http(s):// URL, not 'file:///x#mode=s3'",
    ),
    (
        "s3://bucket/k#mode=zip",
        "storage word 'zip' conflicts with storage 's3' in 's3://bucket/k#mode=zip'",
    ),
    (
        "memory://x#mode=file",
        "storage word 'file' cannot be used with protocol 'memory' in 'memory://x#mode=file'",
    ),
    (
        "https://example.com/x#mode=zip",
        "storage word 'zip' cannot be used with 'https://example.com/x#mode=zip'",
    ),
    ("memory://x#=v", "empty key in fragment of 'memory://x#=v'"),
    ("memory://x#mode&mode=a", "unknown mode word 'a' in fragment of 'memory://x#mode&mode=a'"),
    ("s3://", "s3 URL without a bucket: 's3://'"),
    ("s3:///key", "s3 URL without a bucket: 's3:///key'"),
    ("https://s3.amazonaws.com/", "S3 URL without a bucket: 'https://s3.amazonaws.com/'"),
    ("http://127.0.0.1:9000/#mode=s3", "S3 URL without a bucket: 'http://127.0.0.1:9000/#mode=s3'"),
    (
        "s3://ab/k",
        "invalid bucket name 'ab' in 's3://ab/k': S3 buckets are 3-63 letters, "
        "digits, '.', '_' or '-', starting and ending with a letter or digit",
    ),
    ("s3://" + "b" * 64 + "/k", "invalid bucket name '" + "b" * 64 + "'"),
    ("s3://-bucket/k", "invalid bucket name '-bucket' in 's3://-bucket/k'"),
    ("s3://a..b/k", "invalid bucket name 'a..b' in 's3://a..b/k'"),
    ("s3://bu cket/k", "invalid bucket name 'bu cket' in 's3://bu cket/k'"),
    ("s3://bucket:9000/k", "s3 URL bucket 'bucket:9000' has a port: 's3://bucket:9000/k'"),
    (
        "s3://bucket/a//b",
        "invalid key 'a//b' in 's3://bucket/a//b': empty, '.' and '..' segments are not allowed",
    ),
    ("s3://bucket/a/../b", "invalid key 'a/../b' in 's3://bucket/a/../b'"),
    ("s3://bucket/k?versionId=1", "S3 URLs take no query string: 's3://bucket/k?versionId=1'"),
    ("http://h:0/b#mode=s3", "invalid port '0' in 'http://h:0/b#mode=s3': expected 1-65535"),
    ("http://h:65536/b#mode=s3", "invalid port '65536' in 'http://h:65536/b#mode=s3'"),
    ("http://h:9x/b#mode=s3", "invalid port '9x' in 'http://h:9x/b#mode=s3'"),
    ("http://h_x/b#mode=s3", "invalid host 'h_x' in 'http://h_x/b#mode=s3'"),
    ("http:///b#mode=s3", "URL without a host: 'http:///b#mode=s3'"),
    ("http://h:\u00b2/b#mode=s3", "invalid port '\u00b2'"),
    (
        "https://example.com:70000/ds.zarr",
        "invalid port '70000' in 'https://example.com:70000/ds.zarr': expected 1-65535",
    ),
    ("https://[::1]:0/ds.zarr", "invalid port '0' in 'https://[::1]:0/ds.zarr'"),
    ("http:///ds.zarr", "URL without a host: 'http:///ds.zarr'"),
    ("file:/x/y", "file URLs are written file:///absolute/path, got 'file:/x/y'"),
    ("https://s3.us-west-2.amazonaws.com:443/b/k", "AWS S3 URLs take no port"),
    (
        "https://ec2.amazonaws.com/b/k",
        "unrecognized AWS S3 host 'ec2.amazonaws.com' in 'https://ec2.amazonaws.com/b/k'",
    ),
    (
        "https://s3.us-west-2.amazonaws.com/b1k/k#aws.region=eu-west-1",
        "region 'us-west-2' from the host conflicts with aws.region='eu-west-1'",
    ),
    (
        "file://server/share/x",
        "file URL host must be empty or 'localhost', got 'server' in 'file://server/share/x'",
    ),
    ("file://", "file URL without an absolute path: 'file://'"),
    ("file:///x?y=1", "file URLs take no query string: 'file:///x?y=1'"),
    ("zip::s3://bucket/x.zip", "chained fsspec URLs are not supported: 'zip::s3://bucket/x.zip'"),
    ("", "empty URL ''"),
    ("#mode=zarr", "empty URL '#mode=zarr'"),
    ("/x\n/y", "control or surrogate characters in URL"),
]


@pytest.mark.parametrize(("url", "message"), ERRORS, ids=[u or "<empty>" for u, _ in ERRORS])
def test_errors_name_the_wrong_part(url: str, message: str) -> None:
    with pytest.raises(InvalidURLError) as info:
        parse_url(url)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, NCZarrError)


@pytest.mark.parametrize(
    "url",
    [
        "https://alice:s3cr3t@s3.amazonaws.com/bucket/k",
        "http://alice:s3cr3t@127.0.0.1:9000/bucket/k#mode=s3",
        "https://alice:s3cr3t@example.com/ds.zarr",
        "s3://alice:s3cr3t@bucket/k",
        "ftp://alice:s3cr3t@host/x#mode=zar",
    ],
)
def test_credentials_are_rejected_and_never_echoed(url: str) -> None:
    with pytest.raises(InvalidURLError) as info:
        parse_url(url)
    text = str(info.value)
    assert "s3cr3t" not in text and "alice" not in text
    assert "***@" in text


def test_wrong_types() -> None:
    with pytest.raises(InvalidURLError, match="expected a URL or path, got int"):
        parse_url(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidURLError, match="expected a str path, got bytes"):
        parse_url(_BytesPath())


class _BytesPath(os.PathLike):
    def __fspath__(self) -> bytes:  # type: ignore[override]
        return b"/x"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"storage": "S3", "path": ""}, "invalid storage 'S3'"),
        ({"storage": "file", "path": "rel"}, "local path 'rel' is not absolute"),
        (
            {"storage": "file", "path": "/x", "bucket": "bucket"},
            "bucket 'bucket' is only meaningful for s3, not 'file'",
        ),
        (
            {"storage": "memory", "path": "x", "region": "r"},
            "region 'r' is only meaningful for s3, not 'memory'",
        ),
        ({"storage": "memory", "path": "x#y"}, "invalid memory path 'x#y'"),
        ({"storage": "s3", "path": "k"}, "invalid bucket None"),
        (
            {"storage": "s3", "path": "k", "bucket": "bkt", "endpoint": "ftp://h"},
            "invalid endpoint 'ftp://h'",
        ),
        (
            {"storage": "s3", "path": "k", "bucket": "bkt", "endpoint": "http://h/path"},
            "invalid endpoint 'http://h/path'",
        ),
        (
            {
                "storage": "s3",
                "path": "k",
                "bucket": "bkt",
                "region": "a",
                "params": {"aws.region": "b"},
            },
            "conflicting regions 'a' and aws.region='b'",
        ),
        (
            {"storage": "memory", "path": "x", "params": {"mode": "zarr"}},
            "invalid fragment key 'mode'",
        ),
        (
            {"storage": "memory", "path": "x", "mode": {"zarr", "foo"}},
            "unknown mode word 'foo' in mode of storage 'memory'",
        ),
    ],
)
def test_constructor_validates(kwargs: dict, message: str) -> None:
    with pytest.raises(InvalidURLError) as info:
        NCZarrURL(**kwargs)
    assert message in str(info.value)


def test_doctests() -> None:
    result = doctest.testmod(nczarr.maps.url, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# ----------------------------------------------------------------- round trips
_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
_SEGMENT = _TEXT.filter(lambda s: s not in ("", ".", "..") and "/" not in s and "\\" not in s)
_KEY_PREFIX = st.lists(_SEGMENT, max_size=4).map("/".join)
_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_BUCKET = st.builds(
    lambda a, mid, b: a + mid + b,
    st.sampled_from(_ALNUM),
    st.text(_ALNUM + "-_", min_size=1, max_size=20),
    st.sampled_from(_ALNUM),
) | st.sampled_from(["s3.eu-west-1.amazonaws.com", "b.s3.amazonaws.com"])


_MODE = st.builds(
    lambda fmt, store, extra, version: fmt | extra | set(store) | set(version),
    st.sets(st.sampled_from(["nczarr", "zarr", "xarray", "noxarray"])),
    st.sampled_from([(), ("file",), ("zip",), ("s3",)]),
    st.sets(st.just("consolidated")),
    st.sampled_from([(), ("v2",), ("v3",)]),
)
_PARAMS = st.dictionaries(
    st.text(_ALNUM + "._-=&#% ", min_size=1, max_size=8).filter(lambda k: k != "mode"),
    _TEXT,
    max_size=3,
)
_ENDPOINT = st.builds(
    lambda scheme, host, port: f"{scheme}://{host}" + (f":{port}" if port else ""),
    st.sampled_from(["http", "https"]),
    st.sampled_from(["127.0.0.1", "localhost", "minio.example.org", "[::1]"]),
    st.none() | st.integers(1, 65535),
)


@st.composite
def nczarr_urls(draw: st.DrawFn) -> NCZarrURL:
    mode = draw(_MODE)
    params = draw(_PARAMS)
    storage_word = next((w for w in ("file", "zip", "s3") if w in mode), None)
    kind = storage_word or draw(st.sampled_from(["file", "zip", "s3", "memory", "gs", "http"]))
    if kind in ("file", "zip"):
        path = "/" + draw(_KEY_PREFIX)
        if kind == "file" and storage_word is None:
            mode = mode | {"file"}
        return NCZarrURL(kind, path, mode=mode, params=params)
    if kind == "s3":
        region = draw(st.none() | st.sampled_from(["us-west-2", "eu-central-1", "garage"]))
        params = {k: v for k, v in params.items() if k != "aws.region"}
        return NCZarrURL(
            "s3",
            draw(_KEY_PREFIX),
            bucket=draw(_BUCKET),
            endpoint=draw(st.none() | _ENDPOINT),
            region=region,
            mode=mode,
            params=params,
        )
    path = draw(
        st.text(
            st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="#@"),
            max_size=15,
        )
    )
    if kind == "http":
        path = "example.com/" + path
    return NCZarrURL(kind, path, mode=mode - {"file", "zip", "s3"}, params=params)


@given(nczarr_urls())
def test_generated_values_round_trip_through_str(url: NCZarrURL) -> None:
    again = parse_url(str(url))
    assert again == url
    assert str(again) == str(url)


@given(
    st.sampled_from([u for u, _ in ACCEPTED]),
    st.lists(st.sampled_from(MODE_WORDS), max_size=3),
    _PARAMS,
)
def test_parsed_urls_round_trip(base: str, words: list[str], params: dict[str, str]) -> None:
    try:
        parsed = parse_url(base)
        extended = NCZarrURL(
            parsed.storage,
            parsed.path,
            bucket=parsed.bucket,
            endpoint=parsed.endpoint,
            region=parsed.region,
            mode=parsed.mode | set(words),
            params={**params, **parsed.params},
        )
    except InvalidURLError:
        return  # a conflicting mode word: covered by the error tests
    assert parse_url(str(extended)) == extended


_PIECES = [*"ab9.-_:/@#?&=%,[] Zé", *MODE_WORDS, "mode=", "s3.amazonaws.com", "%2F"]
_URLISH = st.builds(
    str.__add__,
    st.sampled_from(["", "/", "file://", "file:///", "s3://", "http://", "https://", "memory://"]),
    st.lists(st.sampled_from([*_PIECES, ".s3.eu-west-1.amazonaws.com"]), max_size=12).map("".join),
)


@given(st.text(max_size=40) | _URLISH)
def test_arbitrary_text_parses_or_raises_invalid_url(text: str) -> None:
    try:
        parsed = parse_url(text)
    except InvalidURLError:
        return
    assert parse_url(str(parsed)) == parsed
