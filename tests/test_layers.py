"""Imports run downhill only, and the folders are the layers (lowest first): the package's leaves (`errors`,
`annotate`) -> core/ -> sql/ -> store/ -> query/ -> present/ -> answers/ -> the face (`nsysql`, `api`) -> cli/.
Read from the source with `ast`, every import counts: at the top, inside a function, or under TYPE_CHECKING. A
module may import its own folder or any lower one, never a higher one, and no set of modules imports itself round in
a circle. A module's layer is its folder; a new top-level module needs a place here, on purpose (the top level keeps
only the package's face)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "nsysql"

# lowest first: folders of nsysql/, and the few top-level modules by name
LAYERS = ["errors", "annotate", "core", "sql", "store", "query", "present", "answers", "face", "cli"]
TOP_LEVEL = {"nsysql.errors": "errors", "nsysql.annotate": "annotate", "nsysql": "face", "nsysql.api": "face",
             "nsysql.__main__": "cli"}
RANK = {name: rank for rank, name in enumerate(LAYERS)}


def modules() -> dict[str, Path]:
    """Dotted name (`nsysql.cli.gaps`) -> file, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = modules()


def layer_of(module: str) -> str:
    if module in TOP_LEVEL:
        return TOP_LEVEL[module]
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] in RANK and (PACKAGE / parts[1]).is_dir():
        return parts[1]
    if len(parts) == 2 and parts[1] in RANK and (PACKAGE / parts[1]).is_dir():
        return parts[1]  # a layer folder's __init__
    raise KeyError(f"{module} has no layer: put it in one of nsysql's layer folders ({', '.join(LAYERS[2:])})")


def layer_rank(module: str) -> int:
    return RANK[layer_of(module)]


def imports(module: str, path: Path) -> list[tuple[str, int]]:
    """(imported module, line) of every import in `module` naming a module of this package or of `capture`."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:  # `from . import catalog` imports the module nsysql.sql.catalog
                found.append((f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES else target,
                              node.lineno))
    return [(name, line) for name, line in found if name.split(".")[0] in ("nsysql", "capture")]


GRAPH = {m: imports(m, p) for m, p in MODULES.items()}


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_rank(module)


def test_the_top_level_keeps_only_the_face():
    top = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert top == ["__init__", "__main__", "annotate", "api", "errors"], top
    assert sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(LAYERS[2:8] + ["cli"])


def test_a_module_outside_the_layer_folders_has_no_layer():
    with pytest.raises(KeyError):
        layer_rank("nsysql.stray")
    with pytest.raises(KeyError):
        layer_rank("nsysql.misc.thing")


def test_imports_run_downhill():
    uphill = []
    for module, found in GRAPH.items():
        for target, line in found:
            if target.startswith("capture"):
                continue  # the capture extra: test_capture_side_imports_nothing_of_the_query_side
            if layer_rank(target) > layer_rank(module):
                uphill.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}")
    assert not uphill, "imports that run uphill:\n" + "\n".join(uphill)


def test_no_import_cycles():
    edges = {m: {t for t, _ in found if t in MODULES and t != m} for m, found in GRAPH.items()}
    cycles = []

    def visit(node: str, path: list[str], done: set[str]) -> None:
        for nxt in sorted(edges[node]):
            if nxt in path:
                cycles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in done:
                visit(nxt, path + [nxt], done)
        done.add(node)

    done: set[str] = set()
    for start in sorted(edges):
        if start not in done:
            visit(start, [start], done)
    assert not cycles, "modules importing each other:\n" + "\n".join(sorted(set(cycles)))


def test_capture_side_imports_nothing_of_the_query_side():
    """The capture extra (torch's side) uses nsysql.annotate only, which imports nothing of nsysql; and only the
    `capture` command module imports the capture package."""
    for path in sorted((ROOT / "capture").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for target, line in imports(module, path):
            assert not target.startswith("nsysql") or target == "nsysql.annotate", f"{path}:{line} imports {target}"
    assert not GRAPH["nsysql.annotate"]
    users = {m for m, found in GRAPH.items() if any(t.startswith("capture") for t, _ in found)}
    assert users == {"nsysql.cli.capture"}


def test_the_checker_sees_uphill_imports(tmp_path):
    """The parser resolves relative imports the way Python does (guards the tests above against passing empty)."""
    path = tmp_path / "probe.py"
    path.write_text("from ..sql import catalog\nfrom ..cli.common import gather\nfrom .. import open\n"
                    "import nsysql.present.render\n")
    assert [t for t, _ in imports("nsysql.query.queries", path)] == [
        "nsysql.sql.catalog", "nsysql.cli.common", "nsysql", "nsysql.present.render"]
    path.write_text("from .common import gather\nfrom .. import open\nfrom ..sql import catalog\n")
    assert [t for t, _ in imports("nsysql.cli.gaps", path)] == ["nsysql.cli.common", "nsysql", "nsysql.sql.catalog"]
    assert layer_rank("nsysql.cli.common") > layer_rank("nsysql.answers.summary") > layer_rank("nsysql.query.queries")


def test_one_class_named_export_and_a_rule_for_where_a_method_lives():
    """`nsysql.Export` is the package's one class named Export; the query API (Queries) runs one catalogued query per
    method, and every method the face adds is one line handing the export to a module under nsysql/answers/."""
    import inspect

    import nsysql
    from nsysql import api
    from nsysql.query import queries
    named = [(m, n) for m, p in MODULES.items()
             for n in (node.name for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
                       if isinstance(node, ast.ClassDef)) if n == "Export"]
    assert named == [("nsysql.api", "Export")]
    assert nsysql.Export is api.Export and issubclass(api.Export, queries.Queries)
    for name, method in vars(api.Export).items():
        if name.startswith("_") or not callable(method):
            continue
        body = [line.strip() for line in inspect.getsource(method).splitlines()[1:]
                if line.strip() and not line.strip().startswith(("#", '"""', "`")) and '"""' not in line]
        imports = [line for line in body if line.startswith("from nsysql.answers")]
        assert imports, f"Export.{name} hands the export to no module under nsysql/answers/"


# -- commands: every module registered, and a broken one is an error ------------------------------------------
def test_every_command_module_is_registered():
    import re

    from nsysql.cli import app as cli
    files = {p.stem for p in (PACKAGE / "cli").glob("*.py")
             if re.search(r"^def register\(", p.read_text(encoding="utf-8"), re.M)}
    assert set(cli.COMMAND_MODULES) == files


def test_a_command_module_that_fails_to_import_is_an_error():
    import typer

    from nsysql.cli import app as cli
    with pytest.raises(ModuleNotFoundError):
        cli.register_commands(typer.Typer(), ("no_such_command",))


def test_capture_is_left_out_only_without_the_capture_package(monkeypatch):
    import importlib

    import typer

    from nsysql.cli import app as cli
    real = importlib.import_module

    def without(missing: str):
        def fake(name, *args):
            if name == "nsysql.cli.capture":
                raise ModuleNotFoundError(f"No module named {missing!r}", name=missing)
            return real(name, *args)
        return fake

    app = typer.Typer()
    monkeypatch.setattr(importlib, "import_module", without("capture"))
    cli.register_commands(app, ("capture",))
    assert not app.registered_commands
    monkeypatch.setattr(importlib, "import_module", without("torchvision"))  # a missing dependency of capture's
    with pytest.raises(ModuleNotFoundError):
        cli.register_commands(app, ("capture",))
