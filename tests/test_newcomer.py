"""What a new user meets first works (issue 21): every subcommand's ``--help``,
``python -m nczarr``, the README's S3 URLs, the package metadata, the package
docstring and the docs index."""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

import nczarr
from nczarr.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "netcdf4101.zip"


def _subcommands() -> list[str]:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


@pytest.mark.parametrize("command", _subcommands())
def test_every_subcommand_answers_help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: nczarr {command} ") and "--help" in out


def test_dump_h_stays_header_only(capsys):
    assert main(["dump", "-h", str(EXAMPLE)]) == 0
    header = capsys.readouterr().out
    assert main(["dump", str(EXAMPLE)]) == 0
    full = capsys.readouterr().out
    assert "variables:" in header and "data:" not in header and "data:" in full


def test_convert_help_states_the_default_mode(capsys):
    with pytest.raises(SystemExit):
        main(["convert", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "else nczarr" in text and "does not choose it" in text


def test_python_m_nczarr_runs_the_command():
    run = subprocess.run(
        [sys.executable, "-m", "nczarr", "--version"], capture_output=True, text=True, cwd=ROOT
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"nczarr {nczarr.__version__}"
    run = subprocess.run(
        [sys.executable, "-m", "nczarr", "info", str(EXAMPLE)], capture_output=True, text=True
    )
    assert run.returncode == 0 and "layout" in run.stdout, run.stderr


def _s3_urls(text: str) -> list[str]:
    return [u for u in re.findall(r"s3://[^\s`\"')<>]+", text) if not u.startswith("s3://<")]


@pytest.mark.parametrize(
    "page",
    ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))],
)
def test_s3_urls_in_the_docs_are_valid(page):
    urls = _s3_urls((ROOT / page).read_text())
    for url in urls:
        parsed = nczarr.parse_url(url)  # raises InvalidURLError on an invalid bucket
        assert 3 <= len(parsed.bucket) <= 63, url
    if page == "README.md":
        assert len(urls) >= 5


def test_package_metadata_is_present():
    meta = importlib.metadata.metadata("nczarr")
    assert meta["Version"] == nczarr.__version__
    assert meta["License-Expression"] == "BSD-3-Clause"
    assert meta.get("Author") or meta.get("Author-email")
    classifiers = meta.get_all("Classifier") or []
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert "Programming Language :: Python :: 3.13" in classifiers
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert {"Homepage", "Documentation", "Issues"} <= set(urls)
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("BSD 3-Clause License")
    assert "Neither the name of the copyright holder" in license_text


def test_package_docstring_names_the_whole_public_surface():
    doc = nczarr.__doc__
    assert "three layers" not in doc.lower()
    missing = [name for name in nczarr.__all__ if name != "__version__" and name not in doc]
    assert missing == []
    assert 'engine="nczarr"' in doc and "python -m nczarr" in doc


def test_docs_index_links_every_page():
    index = (ROOT / "docs" / "index.md").read_text()
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", index)
    for link in links:
        assert (ROOT / "docs" / link).resolve().exists(), link
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages <= set(links)
    assert "## Getting started" in index
    assert "docs/index.md" in (ROOT / "README.md").read_text()


def test_readme_zarrstore_example_works_where_it_says(tmp_path):
    import zarr

    readme = (ROOT / "README.md").read_text()
    assert 'm = nczarr.open_map("/tmp/nczarr-demo.zarr")' in readme
    assert 'root = nczarr.open_zarr("examples/netcdf4101.zip")' in readme
    demo = tmp_path / "nczarr-demo.zarr"
    nczarr.convert(str(ROOT / "examples" / "legacy.zip"), str(demo), mode="zarr")
    root = zarr.open_group(store=nczarr.ZarrStore(nczarr.open_map(str(demo))), mode="r")
    assert root["pressure"].shape == (4, 2)
    translated = nczarr.open_zarr(str(EXAMPLE))
    assert "v" in set(translated.array_keys())
    # as stored, netcdf-c's char arrays (">S1") are what zarr-python cannot open
    with pytest.raises(Exception, match="S1"):
        store = nczarr.ZarrStore(nczarr.open_map(str(EXAMPLE)))
        as_stored = zarr.open_group(store=store, mode="r")
        [as_stored[name][...] for name in as_stored.array_keys()]
