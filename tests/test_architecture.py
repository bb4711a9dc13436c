"""The package's own import graph: no cycles, no private name imported across modules.

Checked statically (``ast``), over every module of ``nczarr``, including imports made
inside functions: a lazy import hides a cycle from the interpreter, not from a reader.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "nczarr"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` names, seen from ``module``."""
    if node.level == 0:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imports(module: str) -> list[tuple[str, str | None, int]]:
    """``(target module, imported name or None, line)`` for each nczarr import."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, None, node.lineno) for a in node.names if a.name in MODULES]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node)
            if target.split(".")[0] != "nczarr":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:  # ``from . import maps`` imports a module
                    found.append((sub, None, node.lineno))
                else:
                    found.append((target, alias.name, node.lineno))
    return found


def _graph() -> dict[str, set[str]]:
    """Module -> the nczarr modules it imports, at top level or inside functions."""
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        edges: set[str] = set()
        for target, _name, _line in _imports(module):
            edges.add(target)
        graph[module] = {t for t in edges if t in MODULES and t != module}
    return graph


def test_every_module_is_seen() -> None:
    assert "nczarr.errors" in MODULES and len(MODULES) > 20


def test_no_private_name_is_imported_from_another_module() -> None:
    offenders = [
        f"{module}:{line} imports {name} from {target}"
        for module in MODULES
        for target, name, line in _imports(module)
        if name is not None and name.startswith("_") and not name.startswith("__")
    ]
    assert offenders == []


def test_no_import_cycles() -> None:
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for succ in sorted(graph[node]):
            if state.get(succ) == 1:
                cycles.append([*stack[stack.index(succ) :], succ])
            elif succ not in state:
                visit(succ)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert cycles == []


# ------------------------------------------------- backends declare, callers ask
def _concrete_maps(everywhere: bool = False) -> dict[str, type]:
    """Every concrete map class of ``nczarr.maps`` (any ``ZMap`` subclass), by name;
    ``everywhere``: of the whole package (the translated view, the netCDF file source,
    the maps ``conversion/`` and ``integrations/`` define for themselves)."""
    import importlib
    import inspect

    from nczarr.maps.base import ZMap

    found: dict[str, type] = {}
    for module in MODULES:
        if not everywhere and not module.startswith("nczarr.maps."):
            continue
        try:
            loaded = importlib.import_module(module)
        except ImportError:  # an optional dependency: its classes are named below anyway
            continue
        for name, obj in vars(loaded).items():
            if inspect.isclass(obj) and issubclass(obj, ZMap) and obj is not ZMap:
                found[name] = obj
    return found


def _names_in(node: ast.AST) -> set[str]:
    """Every bare name and attribute name mentioned in an expression."""
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            names.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            names.add(sub.attr)
    return names


def _docstrings(tree: ast.AST) -> set[int]:
    """Ids of the docstring and ``__all__`` string nodes (names, not decisions).

    A bare class name elsewhere (the lazy re-exports of ``nczarr/__init__.py``) is a
    name too; it counts only inside a comparison."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            ids.update(id(sub) for sub in ast.walk(node.value))
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def backend_type_tests(source: str, classes: dict[str, type]) -> list[tuple[int, str]]:
    """``(line, what)`` for each place ``source`` decides by a concrete map's class:
    ``isinstance``/``issubclass`` against one, an identity or equality comparison
    mentioning one (``type(m)._load is FileMap._load``), a string naming one
    (``"nczarr.maps.zip.ZipMap"``, ``type(m).__name__ == "FileMap"``), or
    ``getattr``/``hasattr`` probing for an attribute only concrete maps have."""
    from nczarr.maps.base import ZMap

    base_attrs = set(dir(ZMap))
    only_concrete = {
        attr
        for cls in classes.values()
        for attr in vars(cls)
        if not attr.startswith("__") and attr not in base_attrs
    }
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            fn, args = node.func.id, node.args
            if fn in ("isinstance", "issubclass") and len(args) == 2:
                hit = _names_in(args[1]) & set(classes)
                if hit:
                    found.append((node.lineno, f"{fn}(..., {sorted(hit)})"))
            if fn in ("getattr", "hasattr") and len(args) >= 2:
                name = args[1]
                if isinstance(name, ast.Constant) and name.value in only_concrete:
                    found.append((node.lineno, f"{fn}(..., {name.value!r})"))
        elif isinstance(node, ast.Compare):
            hit = _names_in(node) & set(classes)
            hit |= {
                sub.value
                for sub in ast.walk(node)
                if isinstance(sub, ast.Constant) and sub.value in classes
            }
            if hit:
                found.append((node.lineno, f"comparison with {sorted(hit)}"))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and any(node.value.endswith(f".{name}") for name in classes)
        ):
            found.append((node.lineno, f"class name {node.value!r}"))
    return found


def test_no_backend_type_test_outside_maps() -> None:
    """What a caller needs to know about a map is asked of the map (its capabilities,
    ``nczarr.maps.base``), never decided by its class: a new backend then needs no edit
    outside ``maps/``."""
    classes = _concrete_maps()
    assert {"FileMap", "ZipMap", "MemoryMap", "FsspecMap", "S3Map", "ChainedZipMap"} <= set(classes)
    offenders = [
        f"{module}:{line}: {what}"
        for module, path in MODULES.items()
        if not module.startswith("nczarr.maps")
        for line, what in backend_type_tests(path.read_text(encoding="utf-8"), classes)
    ]
    assert offenders == []


def test_no_module_tests_the_class_of_another_modules_map() -> None:
    """The same for the maps defined outside ``maps/`` (``TranslatedView``,
    ``NetCDFFileMap`` ...): a module asks a map what it is (``ZMap.source``,
    ``ZMap.chunk_map``, ``ZMap.file_format``), never ``isinstance`` or ``getattr`` a
    class another module defines (its own, as ``TranslatedView.__eq__``, it may)."""
    classes = _concrete_maps(everywhere=True)
    assert {"TranslatedView", "NetCDFFileMap", "FileMap"} <= set(classes)
    offenders = []
    for module, path in MODULES.items():
        if module.startswith("nczarr.maps"):
            continue
        others = {n: c for n, c in classes.items() if c.__module__ != module}
        offenders += [
            f"{module}:{line}: {what}"
            for line, what in backend_type_tests(path.read_text(encoding="utf-8"), others)
        ]
    assert offenders == []


def test_the_backend_type_test_check_finds_each_form() -> None:
    classes = _concrete_maps()
    bad = """
from nczarr.maps.zip import ZipMap
from nczarr.maps import file
def f(m, n):
    if isinstance(m, ZipMap | file.FileMap):
        pass
    if type(m)._load is file.FileMap._load:
        pass
    names = {"nczarr.maps.memory.MemoryMap"}
    if type(n).__name__ == "S3Map":
        pass
    return getattr(m, "same_service", None), hasattr(n, "copy_file")
"""
    lines = sorted(line for line, _ in backend_type_tests(bad, classes))
    assert lines == [5, 7, 9, 10, 12, 12]
    good = '''
def f(m):
    """Ask a FileMap or a ZipMap."""
    if m.supports_shared_writes and m.copy_support(m) == "local":
        return m.location()
    return getattr(m, "close", None)
'''
    assert backend_type_tests(good, classes) == []


def zmap_members() -> set[str]:
    """The names every map answers (``ZMap``'s and ``MapCore``'s own members), less
    the names any mapping or file has (``keys``, ``close``, ``mode`` ...): probing an
    object for one of these is probing it for a map's ability."""
    import io
    from collections.abc import MutableMapping

    from nczarr.maps.base import ZMap

    own = {n for cls in ZMap.__mro__ if cls.__module__.startswith("nczarr.") for n in vars(cls)}
    generic = set(dir(MutableMapping)) | set(dir(io.FileIO))
    return {n for n in own if not n.startswith("__")} - generic


def member_probes(source: str, members: set[str]) -> list[tuple[int, str]]:
    """``(line, what)`` for each ``getattr``/``hasattr`` in ``source`` that asks for one
    of ``members`` by its literal name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id in ("getattr", "hasattr") and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and name.value in members:
                found.append((node.lineno, f"{node.func.id}(..., {name.value!r})"))
    return found


def test_no_module_probes_a_map_for_what_every_map_has() -> None:
    """Every map has each capability (``copy_from``, ``discard``, ``source`` ...), with
    a default saying "not supported" or doing the generic thing: a caller calls it
    (``m.copy_from(...) is NOT_SUPPORTED``), never ``getattr(m, "copy_from", None)``."""
    members = zmap_members()
    assert {"copy_from", "discard", "source", "chunk_map", "location"} <= members
    assert not {"keys", "get", "close", "flush", "mode", "closed"} & members
    offenders = [
        f"{module}:{line}: {what}"
        for module, path in MODULES.items()
        if not module.startswith("nczarr.maps")
        for line, what in member_probes(path.read_text(encoding="utf-8"), members)
    ]
    assert offenders == []


def test_the_member_probe_check_finds_a_probe() -> None:
    bad = """
def abort(self, target, stage):
    discard = getattr(self.map, "discard", None)
    copy = getattr(target, "copy_from", None)
    if hasattr(stage, "_load") or hasattr(stage, "supports_shared_writes"):
        pass
    return getattr(stage, "get", None), getattr(stage, "close", None), hasattr(os, "pread")
"""
    lines = sorted(line for line, _ in member_probes(bad, zmap_members()))
    assert lines == [3, 4, 5, 5]


# ------------------------------------------------------------------ value classes
#: Modules that use zarr's dataclasses (``fields``/``replace`` of zarr's metadata and
#: config objects, a subclass of one), not value classes of their own.
ZARR_DATACLASS_USERS = {
    "nczarr.integrations.calling_thread",
    "nczarr.integrations.v2arrays",
    "nczarr.integrations.fastpipeline",  # extends zarr's BatchedCodecPipeline, a dataclass
    # a record is a dataclass to dataclasses' functions when they ask (not at import)
    "nczarr.records",
    "nczarr.records.compat",
    "nczarr.records.methods",
}


def dataclass_imports(source: str) -> list[int]:
    """Lines importing :mod:`dataclasses`, at top level or inside a function."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if (isinstance(node, ast.Import) and any(a.name == "dataclasses" for a in node.names))
        or (isinstance(node, ast.ImportFrom) and node.module == "dataclasses")
    ]


def test_value_classes_are_records_not_dataclasses() -> None:
    """nczarr's value classes are ``nczarr.records.record``s: ``@dataclass`` compiles
    each class's methods when its module is imported, 43 % of a command's start
    (docs/architecture.md, ``records/``)."""
    found = {
        module: lines
        for module, path in MODULES.items()
        if module not in ZARR_DATACLASS_USERS
        and (lines := dataclass_imports(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_dataclass_check_finds_each_form() -> None:
    source = (
        "import dataclasses\nfrom dataclasses import dataclass\n"
        "def f():\n    from dataclasses import replace\n"
    )
    assert dataclass_imports(source) == [1, 2, 4]
    assert dataclass_imports("from .records import record\nimport inspect\n") == []


# ------------------------------------------------------------------ floors
#: The floors of docs/architecture.md, bottom first: a module imports only from lower
#: floors or from its own part (``maps.file`` from ``maps.base``); parts on one floor
#: (one set) do not import each other.
FLOORS: list[set[str]] = [
    {"errors", "_version", "hooks", "lazy", "records"},
    {"environment"},  # NCZARR_* settings (refusals are errors)
    {"keys", "inflate"},
    {"maps"},  # storage ...
    {"translate"},  # ... and translation do not import each other (checked below)
    {"ncfile"},  # netCDF files as read-only sources (a map and its model)
    {"load", "reencode"},
    {"readthrough", "diagnosis"},
    {"conversion", "integrations"},
    {"cli"},
    {"__main__"},
]
#: Pairs on distinct floors that must not import each other in either direction.
APART = {frozenset({"maps", "translate"}), frozenset({"conversion", "integrations"})}


def _part(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def _floor(part: str) -> int:
    for level, parts in enumerate(FLOORS):
        if part in parts:
            return level
    return len(FLOORS)  # the package itself (nczarr/__init__.py) is the top


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``"a -> b"`` for each import of ``b`` by ``a`` that does not go down the floors."""
    bad = []
    for module, targets in graph.items():
        part = _part(module)
        for target in targets:
            other = _part(target)
            if other == part:
                continue
            if _floor(other) >= _floor(part) or frozenset({part, other}) in APART:
                bad.append(f"{module} -> {target}")
    return sorted(bad)


def test_every_part_is_on_a_floor() -> None:
    parts = {_part(m) for m in MODULES} - {""}
    assert parts <= set().union(*FLOORS), parts - set().union(*FLOORS)


def test_imports_go_down_the_floors() -> None:
    """Including imports inside functions (``_imports`` walks the whole tree)."""
    assert upward_imports(_graph()) == []


def test_the_floor_check_finds_upward_and_sideways_imports() -> None:
    graph = {
        "nczarr.reencode": {"nczarr.integrations.zarr_store", "nczarr.keys"},
        "nczarr.translate.write_common": {"nczarr", "nczarr.translate.model"},
        "nczarr.maps.open": {"nczarr.translate.detect", "nczarr.keys"},
        "nczarr.conversion.api": {"nczarr.integrations.shortcut", "nczarr.readthrough"},
    }
    assert upward_imports(graph) == [
        "nczarr.conversion.api -> nczarr.integrations.shortcut",
        "nczarr.maps.open -> nczarr.translate.detect",
        "nczarr.reencode -> nczarr.integrations.zarr_store",
        "nczarr.translate.write_common -> nczarr",
    ]


# ------------------------------------------------------------------ sizes
#: A function longer than this (code lines, its docstring left out) does several jobs:
#: ``convert`` is a few named steps, the CLI's parser one function per subcommand.
MAX_FUNCTION_LINES = 80
#: A module longer than this holds two jobs and becomes two modules.
MAX_MODULE_LINES = 500
#: Modules still over the limit, each with who splits it (no new entry without a reason).
OVERSIZE: dict[str, str] = {}


def function_lengths(source: str) -> list[tuple[str, int]]:
    """``(name, lines)`` of every function in ``source``, docstring lines not counted."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            first = node.body[0]
            value = first.value if isinstance(first, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                lines -= (first.end_lineno or first.lineno) - first.lineno + 1
            found.append((node.name, lines))
    return found


def test_no_long_function() -> None:
    """In every module of the package (``conversion/`` first had the limit)."""
    offenders = [
        f"{module}.{name}: {lines} lines"
        for module, path in MODULES.items()
        for name, lines in function_lengths(path.read_text(encoding="utf-8"))
        if lines > MAX_FUNCTION_LINES
    ]
    assert offenders == []


def test_the_function_length_check_counts_code_not_docstrings() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(81))
    long = f'def f():\n    """Doc.\n\n    More.\n    """\n{body}\n'
    assert function_lengths(long) == [("f", 82)]
    short = 'def g():\n    """' + "\n" * 100 + '"""\n    return 1\n'
    assert function_lengths(short) == [("g", 2)]


def test_no_module_over_the_size_limit() -> None:
    sizes = {
        path.relative_to(PACKAGE.parent).as_posix(): len(
            path.read_text(encoding="utf-8").splitlines()
        )
        for path in MODULES.values()
    }
    offenders = {p: n for p, n in sizes.items() if n > MAX_MODULE_LINES and p not in OVERSIZE}
    assert offenders == {}
    # an exemption that is no longer needed is removed
    assert {p for p in OVERSIZE if sizes.get(p, 0) <= MAX_MODULE_LINES} == set()


# ------------------------------------------------------------------ public names
def declared_all(source: str) -> list[str] | None:
    """The names of a module's ``__all__`` (a literal list or tuple of strings), or None."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                value = node.value
                assert isinstance(value, ast.List | ast.Tuple), "__all__ is a list of names"
                # ``*_LAZY`` (the package's lazy re-exports) are checked by test_api
                return [e.value for e in value.elts if isinstance(e, ast.Constant)]
    return None


def _top_level_names(source: str) -> set[str]:
    """Names a module defines or imports at top level (including ``if TYPE_CHECKING``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def test_every_module_says_what_is_public() -> None:
    """Every module declares ``__all__`` (what other modules and users may import; the
    rest is internal), and each name it declares exists. The package's public API is
    what ``nczarr/__init__.py`` exports."""
    missing = []
    unknown = []
    for module, path in MODULES.items():
        source = path.read_text(encoding="utf-8")
        names = declared_all(source)
        if names is None:
            missing.append(module)
            continue
        defined = _top_level_names(source)
        lazy = "__getattr__" in defined  # re-exports resolved when first used
        unknown += [f"{module}.{n}" for n in names if n not in defined and not lazy]
    assert missing == []
    assert unknown == []


def imports_past_all(alls: dict[str, list[str] | None]) -> list[str]:
    """``"module:line name from target"`` for each name imported from another nczarr
    module that the target's ``__all__`` does not list (an internal name)."""
    found = []
    for module in MODULES:
        for target, name, line in _imports(module):
            if name is None or target == module or target not in MODULES:
                continue
            declared = alls.get(target)
            if declared is not None and name not in declared:
                found.append(f"{module}:{line} {name} from {target}")
    return sorted(found)


def test_modules_import_only_what_another_declares_public() -> None:
    """What a module's ``__all__`` leaves out is internal to it: no other module of
    the package imports it (a shared helper is listed, so its module says it is shared)."""
    alls = {m: declared_all(p.read_text(encoding="utf-8")) for m, p in MODULES.items()}
    assert imports_past_all(alls) == []


def test_the_internal_import_check_finds_an_unlisted_name() -> None:
    alls = {m: declared_all(p.read_text(encoding="utf-8")) for m, p in MODULES.items()}
    assert "nczarr.translate.target" in alls
    alls["nczarr.translate.target"] = ["check_zarr_format"]  # Target made internal
    offenders = imports_past_all(alls)
    assert any(o.endswith("Target from nczarr.translate.target") for o in offenders)


# ------------------------------------------------------------------ writers
def test_every_writer_module_returns_a_write_result() -> None:
    """Each output format's writer (``translate/write_<name>.py``, named in the
    dispatcher's ``WRITERS``) is ``(dataset, target) -> WriteResult``: one result type
    for every writer (``tests/test_target.py`` calls each one)."""
    writers = {
        module: path
        for module, path in MODULES.items()
        if module.startswith("nczarr.translate.write_")
        and module != "nczarr.translate.write_common"
    }
    assert {"nczarr.translate.write_nczarr", "nczarr.translate.write_zarr3"} <= set(writers)
    shapes = {}
    for module, path in writers.items():
        name = module.rsplit(".", 1)[1]
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                params = [a.arg for a in node.args.args]
                shapes[module] = (params[:2], ast.unparse(node.returns) if node.returns else None)
    assert shapes == {m: (["dataset", "target"], "WriteResult") for m in writers}


# ------------------------------------------------------------------ the map of the house
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


def _section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section of a Markdown text ("" if absent)."""
    start = text.find(f"\n## {heading}\n")
    if start < 0:
        return ""
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def named_files(text: str) -> set[str]:
    """The ``.py`` files and package paths a Markdown text names in backquotes."""
    import re

    spans = re.findall(r"`([^`\n]+)`", text)
    return {
        word.rstrip(".,:;")
        for span in spans
        for word in re.split(r"[\s(),]+", span)
        if word.endswith(".py") or word.startswith(("nczarr/", "tests/"))
    }


def missing_files(names: set[str]) -> list[str]:
    """The names of :func:`named_files` no file of the tree answers (a bare module
    name, ``read_zarr3.py``, may live in any package folder; ``<name>`` is a pattern)."""
    root = PACKAGE.parent
    missing = []
    for name in sorted(names):
        if "<" in name or "*" in name:
            continue
        path = name.split("::")[0].split(":")[0]
        found = (root / path).exists() or (PACKAGE / path).exists()
        found = found or ("/" not in path and any(PACKAGE.rglob(path)))
        found = found or any(PACKAGE.glob(f"*/{path}"))  # ``maps/open.py``
        if not found:
            missing.append(name)
    return missing


def test_the_architecture_doc_names_only_files_that_exist() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    names = named_files(text)
    assert {"nczarr/maps/open.py", "translate/target.py", "conversion/references.py"} <= names
    assert missing_files(names) == []
    assert missing_files({"nczarr/maps/url.py", "maps/gone.py", "nothere.py"}) == [
        "maps/gone.py",
        "nothere.py",
    ]


def test_the_architecture_doc_places_every_module() -> None:
    """A newcomer finds each module's job in docs/architecture.md: its file name
    (``fastgroup.py``) or, in a list of siblings, its name in backquotes (`` `s3` ``)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    unnamed = [
        path.relative_to(PACKAGE).as_posix()
        for path in MODULES.values()
        if path.name not in ("__init__.py", "__main__.py")
        and not any(form in text for form in (path.name, f"`{path.stem}`", f"`{path.stem}."))
    ]
    assert unnamed == []


def test_the_architecture_doc_has_the_three_recipes() -> None:
    """'A new backend', 'a new source format', 'a new output format': each a recipe
    naming the files to add or edit on today's tree."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    wanted = {
        "A new backend": {"nczarr/maps/<name>.py", "nczarr/maps/open.py"},
        "A new source format": {
            "nczarr/translate/read_<name>.py",
            "nczarr/<name>/source.py",
            "nczarr/hooks.py",
        },
        "A new output format": {
            "nczarr/translate/write_<name>.py",
            "nczarr/translate/writer.py",
            "conversion/references.py",
            "conversion/icechunk_repo.py",
        },
    }
    for heading, files in wanted.items():
        section = _section(text, heading)
        assert section, heading
        names = named_files(section)
        assert files <= names, (heading, files - names)
        assert missing_files(names) == [], heading
