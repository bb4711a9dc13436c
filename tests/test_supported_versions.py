"""The versions nczarr claims to support are the ones CI tests (issue 23).

``.ci/run`` runs the suite at the floor (Python 3.11, ``.ci/floor.txt``) and on the
newest Python with the newest releases; these tests keep pyproject.toml's lower
bounds, the floor pins and the README's statement of them in step.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _lower_bounds() -> dict[str, set[str]]:
    """``{name: {lower bounds}}`` of every requirement in pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        requirements += [r for r in extra if not r.startswith("nczarr")]
    bounds: dict[str, set[str]] = {}
    for text in requirements:
        name = re.match(r"[A-Za-z0-9_.-]+", text).group(0).lower()
        lower = re.findall(r">=\s*([^,;\s]+)", text)
        assert len(lower) == 1, f"{text}: no single lower bound"
        bounds.setdefault(name, set()).update(lower)
    return bounds


def _floor() -> dict[str, str]:
    pins = {}
    for line in (ROOT / ".ci" / "floor.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def test_every_lower_bound_is_the_version_pinned_at_the_floor():
    assert {name: {v} for name, v in _floor().items()} == _lower_bounds()


#: Test tools: pinned at the floor, not part of what nczarr supports.
TEST_ONLY = (
    "pytest",
    "pytest-asyncio",
    "pytest-xdist",
    "hypothesis",
    "moto",
    "flask",
    "flask-cors",
    "ruff",
)


def test_readme_states_the_supported_versions():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Supported versions") :]
    section = section[: section.index("\n## ", 3)]
    assert "Python 3.11" in section and "3.13" in section
    for name, version in _floor().items():
        if name not in TEST_ONLY:
            assert re.search(rf"{re.escape(name)} {re.escape(version)}", section, re.I), name


def test_ci_runs_the_readme_command_at_the_floor_and_on_the_newest_python():
    run = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert 'python3 -m pip install -e ".[test]" && python3 -m pytest -n auto -q' in readme
    assert 'python -m pip install --quiet "$@" -e ".[test]" && python -m pytest -n auto -q' in run
    assert "-c .ci/floor.txt" in run and "-c .ci/floor.txt" in readme
    assert 'run newest "$NEWEST_PYTHON"' in run
