"""Text attributes holding control characters in an NCZarr copy.

Valid JSON escapes a control character (``\\u0001``); netcdf-c 4.10 decodes ``\\b \\f
\\n \\r \\t`` but reads any other ``\\u`` escape as its text (``"a\\x01b"`` back as
``"au0001b"``), while netcdf-c's own raw byte makes the object invalid JSON, which
zarr-python's parser refuses. nczarr keeps valid JSON and says, naming the attribute,
what netcdf-c reads (found by a differential hunt: nothing said so before)."""

from __future__ import annotations

import json
from pathlib import Path

import netCDF4
import pytest

import nczarr

from .ncoracle import nc_url


def test_control_characters_are_announced_and_kept_for_json_readers(tmp_path: Path) -> None:
    src = tmp_path / "c.nc"
    with netCDF4.Dataset(src, "w") as ds:
        ds.setncattr("ctrl", "a\x01b")
        ds.setncattr("newline", "a\nb\tc")  # netcdf-c decodes these escapes
        ds.setncattr_string("bell", ["x\x07y"])
    out = tmp_path / "out"
    with pytest.warns(nczarr.NCZarrWarning) as caught:
        nczarr.convert(src, out)
    said = [str(w.message) for w in caught if "control characters" in str(w.message)]
    assert len(said) == 2 and "'ctrl'" in said[0] + said[1] and "'bell'" in said[0] + said[1]
    stored = json.loads((out / ".zattrs").read_bytes())  # strict JSON: readable
    assert stored["ctrl"] == "a\x01b" and stored["newline"] == "a\nb\tc"
    with netCDF4.Dataset(nc_url(out)) as ds:  # what the warning says netcdf-c reads
        assert ds.getncattr("newline") == "a\nb\tc"
        assert ds.getncattr("ctrl") == "au0001b"
    assert nczarr.read(out).root.attributes["ctrl"].value == "a\x01b"


def test_a_zarr_v2_copy_says_so_too(tmp_path: Path) -> None:
    """netcdf-c reads pure Zarr v2 (``#mode=zarr``) with the same JSON parser."""
    src = tmp_path / "c.nc"
    with netCDF4.Dataset(src, "w") as ds:
        ds.setncattr("ctrl", "a\x01b")
    out = tmp_path / "out.zarr"
    with pytest.warns(nczarr.NCZarrWarning, match="'ctrl' of '/' holds control characters"):
        nczarr.convert(src, out, mode="zarr")
    with netCDF4.Dataset(nc_url(out, "zarr")) as ds:
        assert ds.getncattr("ctrl") == "au0001b"


def test_exactly_the_undecoded_control_characters_are_announced_in_any_text() -> None:
    """Every code point, alone, inside printable text and inside text that is not
    printable for another reason (a newline, a non-printable character), in a ``char``
    and a ``string`` attribute: announced exactly when netcdf-c would not decode it,
    a large printable attribute included (its speed is not measured here)."""
    from nczarr.translate.model import Attribute, Dataset, Group
    from nczarr.translate.write_common import control_character_attribute_warnings

    undecoded = {chr(c) for c in range(0x20)} - set("\b\f\n\r\t")
    attributes = {}
    expected = set()
    for c in [*range(0x80), 0x85, 0xA0, 0x2028, 0xFFFF, 0x10FFFF]:
        for i, text in enumerate([chr(c), f"ab{chr(c)}cd", f"a\nb{chr(c)}", f"\x7f{chr(c)}"]):
            name = f"a{c}_{i}"
            attributes[name] = Attribute(name, "char", text)
            attributes[name + "s"] = Attribute(name + "s", "string", ["ok", text])
            if chr(c) in undecoded:
                expected |= {name, name + "s"}
    attributes["big"] = Attribute("big", "char", "x" * (20 * 2**20))
    said = control_character_attribute_warnings(Dataset(Group("", "/", attributes=attributes)))
    assert {text.split("'")[1] for text in said} == expected
    assert len(said) == len(expected) == 2 * 4 * 27
