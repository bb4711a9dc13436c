"""Requests of opening a store on S3, counted at a real TCP proxy in front of moto.

An open looks for eleven optional objects at the store's root (``.zmetadata``,
``zarr.json``, ``.zgroup``, ``.zattrs``, ``.zarray``, NCZarr V1's ``.ncz*`` objects, the
append journal). Before, each was a GET (404 for most): 17 requests to read a small
NCZarr store, 21 for Zarr v2, 15 for Zarr v3, plus two HEADs (``.zmetadata``,
``.zarray``) when the engine or ``open_zarr`` built the view. Now the root is listed
once (one ``ListObjectsV2``) while the likely objects (``zarr.json``, ``.zgroup``,
``.zattrs``) are read, then only the others the listing shows; the listing also
serves the walk of a Zarr store's children; the view asks the metadata already read
instead of HEADs. The format detected is the same as from a directory (which reads
every name), also when the root does not fit one listing page.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nczarr
from nczarr.errors import StoragePermissionError

from . import faultproxy
from .faultproxy import FaultProxy
from .motoiam import iam_server
from .sources import tree

ROOT_NAMES = {
    ".zmetadata",
    "zarr.json",
    ".zgroup",
    ".zattrs",
    ".zarray",
    ".nczarr",
    ".nczgroup",
    ".nczattr",
    ".nczattrs",
    ".in-progress.nczarr",
}
LIKELY = {"zarr.json", ".zgroup", ".zattrs"}

#: ``nczarr.read(url)`` of each store: every request, by operation. Before: 17, 21,
#: 21 and 15 requests (11 GETs of the root each, no listing of it).
READ_BUDGET = {
    # HeadBucket, the root's listing, zarr.json (404) + .zgroup + .zattrs, then
    # .zarray + .zattrs of its 3 arrays (the NCZarr group list names them)
    "nczarr": {"HeadBucket": 1, "ListObjectsV2": 1, "GetObject": 3 + 6},
    # the same root, then .zgroup/.zarray/.zattrs of each of 3 unknown children
    # (the root's listing names them: no second listing)
    "zarr2": {"HeadBucket": 1, "ListObjectsV2": 1, "GetObject": 3 + 9},
    # .zmetadata, shown by the listing, read in a second round
    "zarr2-consolidated": {"HeadBucket": 1, "ListObjectsV2": 1, "GetObject": 4 + 9},
    # zarr.json (.zgroup and .zattrs 404), then each child's zarr.json
    "zarr3": {"HeadBucket": 1, "ListObjectsV2": 1, "GetObject": 3 + 3},
}


def _dataset() -> Any:
    import xarray as xr

    return xr.Dataset(
        {
            "v": (("y", "x"), np.arange(64, dtype="f4").reshape(8, 8)),
            "w": (("y",), np.linspace(0, 1, 8)),
        },
        coords={"y": np.arange(8)},
    )


def _write(kind: str, path: Path) -> Path:
    if kind == "nczarr":
        _dataset().to_netcdf(f"file://{path}#mode=nczarr,file", engine="netcdf4")
    else:
        fmt = 3 if kind == "zarr3" else 2
        _dataset().to_zarr(path, zarr_format=fmt, consolidated=kind.endswith("consolidated"))
    return path


@pytest.fixture
def proxy(s3_endpoint: str) -> Iterator[FaultProxy]:
    with FaultProxy(s3_endpoint) as p:
        yield p


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """``(operation, path)`` of every request the proxies classify."""
    seen: list[tuple[str, str]] = []
    classify = faultproxy.classify

    def recording(method: str, target: str, headers: dict[str, str]) -> str:
        op = classify(method, target, headers)
        seen.append((op, target.split("?", 1)[0]))
        return op

    monkeypatch.setattr(faultproxy, "classify", recording)
    return seen


def _upload(s3_client: Any, bucket: str, prefix: str, local: Path) -> None:
    for key, value in tree(local).items():
        s3_client.put_object(Bucket=bucket, Key=f"{prefix}/{key}", Body=value)


@pytest.fixture(params=sorted(READ_BUDGET))
def on_s3(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    proxy: FaultProxy,
    s3_client: Any,
    s3_bucket: str,
) -> tuple[str, Path, str]:
    """``(kind, local path, URL through the proxy)`` of a store of each kind written
    locally and uploaded to ``s3_bucket/kind``."""
    kind = request.param
    local = _write(kind, tmp_path / kind)
    _upload(s3_client, s3_bucket, kind, local)
    fmt = "nczarr" if kind == "nczarr" else "zarr"
    return kind, local, f"{proxy.endpoint}/{s3_bucket}/{kind}#mode={fmt},s3"


def _root_gets(paths: list[tuple[str, str]], bucket: str, prefix: str) -> set[str]:
    """Names of the objects directly below the store's root that were asked for."""
    start = f"/{bucket}/{prefix}/"
    return {
        p[len(start) :]
        for op, p in paths
        if op in ("GetObject", "HeadObject") and p.startswith(start) and "/" not in p[len(start) :]
    }


def test_an_open_lists_the_root_once_instead_of_probing_each_name(
    on_s3: tuple[str, Path, str],
    proxy: FaultProxy,
    paths: list[tuple[str, str]],
    s3_bucket: str,
) -> None:
    import xarray as xr

    kind, local, url = on_s3
    stored = {k for k in tree(local) if "/" not in k}

    proxy.reset_counts()
    paths.clear()
    dataset = nczarr.read(url)
    assert dict(proxy.counts) == READ_BUDGET[kind]
    # the root names read: the likely ones and those the listing showed, no other
    assert _root_gets(paths, s3_bucket, kind) == LIKELY | (stored & ROOT_NAMES)
    assert sorted(dataset.root.variables) == ["v", "w", "y"]

    # the engine and open_zarr: the same, no HEAD; the engine also reads the index "y"
    for name, open_it, extra in (
        ("engine", lambda: xr.open_dataset(url, engine="nczarr").close(), 1),
        ("open_zarr", lambda: nczarr.open_zarr(url), None),
    ):
        proxy.reset_counts()
        open_it()
        counts = Counter(proxy.counts)
        assert counts["HeadObject"] == 0, (name, counts)
        assert counts["ListObjectsV2"] == 1, (name, counts)
        if extra is not None:
            assert counts["GetObject"] == READ_BUDGET[kind]["GetObject"] + extra, counts
        else:  # + zarr-python's own reads of the root and the journal check
            assert counts["GetObject"] <= READ_BUDGET[kind]["GetObject"] + 5, counts


def test_the_format_detected_is_the_directorys(
    on_s3: tuple[str, Path, str],
    monkeypatch: pytest.MonkeyPatch,
    paths: list[tuple[str, str]],
    s3_bucket: str,
) -> None:
    """A directory reads every root name (no listing); S3 lists: the same FormatInfo,
    and the same when the root does not fit one listing page (then every name is read,
    as before)."""
    import nczarr.maps.s3level as s3level

    kind, local, url = on_s3
    expected = nczarr.detect(str(local))
    assert nczarr.detect(url) == expected

    monkeypatch.setattr(s3level, "PAGE", 1)  # every root holds more than one name
    paths.clear()
    assert nczarr.detect(url) == expected
    assert _root_gets(paths, s3_bucket, kind) == ROOT_NAMES


def test_convert_reads_the_sources_root_once(
    tmp_path: Path,
    proxy: FaultProxy,
    paths: list[tuple[str, str]],
    s3_bucket: str,
    s3_client: Any,
) -> None:
    """convert's source open: the root listed once, no HEAD of a root object (the
    view asked the metadata read, not the store, whether .zmetadata/.zarray exist)."""
    local = _write("nczarr", tmp_path / "src")
    _upload(s3_client, s3_bucket, "src", local)
    url = f"{proxy.endpoint}/{s3_bucket}/src#mode=nczarr,s3"
    paths.clear()
    nczarr.convert(url, str(tmp_path / "out.zarr"))
    assert _root_gets(paths, s3_bucket, "src") == LIKELY
    assert sorted(nczarr.read(str(tmp_path / "out.zarr")).root.variables) == ["v", "w", "y"]


@pytest.fixture(scope="module")
def no_list_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A moto server of its own enforcing IAM, holding an NCZarr store at
    ``public/ds``, and the keys of a user allowed to read objects but not to list the
    bucket (public data served so). The store's files are at ``local``."""
    local = _write("nczarr", tmp_path_factory.mktemp("nolist") / "ds")

    def setup(s3: Any) -> None:
        s3.create_bucket(Bucket="public")
        _upload(s3, "public", "ds", local)

    deny_list = {"Effect": "Deny", "Action": "s3:ListBucket", "Resource": "*"}
    with iam_server(setup, deny_list) as server:
        yield {**server, "local": str(local)}


def test_a_reader_who_may_not_list_reads_every_name_instead(
    no_list_server: dict[str, str],
) -> None:
    """The root's listing is refused (403): the open reads each root name, as before,
    and detects and reads what a directory copy gives."""
    from nczarr.maps.s3 import S3Map

    options = {"key": no_list_server["key"], "secret": no_list_server["secret"]}
    m = S3Map("s3://public/ds", endpoint_url=no_list_server["endpoint"], **options)
    with pytest.raises(StoragePermissionError):
        m.search("")  # the user may indeed not list
    assert nczarr.detect(m) == nczarr.detect(no_list_server["local"])
    expected = nczarr.read(no_list_server["local"]).root
    assert nczarr.read(m).root == expected
