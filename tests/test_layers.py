"""Imports run downhill only: CLI -> commands -> facade -> features -> rendering -> core (and the SQL under
queries/, read as data). Read from the source with `ast`, every import counts: at the top, inside a function,
or under TYPE_CHECKING. A module may import its own layer or any lower one, never a higher one, and no set of
modules imports itself round in a circle. Every module has a layer: a new one is placed here, on purpose."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "nsysql"

# lowest first; a module imports its own layer or lower ones only
LAYERS = {
    "core": ["errors", "signals", "progress", "inputs", "hygiene", "cache", "engine", "readonly", "sqlite_check",
             "sqlite_check_worker",
             "formats_in", "nsys_rep",
             "catalog", "analyses", "macros", "views", "answers", "busy", "build_graph", "importer", "rules", "export"],
    "rendering": ["formats", "render"],
    "features": ["annotate", "open_many", "multi", "adhoc", "attribution", "sanity", "diff", "dataset", "dataset_schemas",
                 "overview", "findings", "plot", "summary", "summary_many", "ahead", "comm", "job", "job_views"],
    "facade": ["nsysql", "api"],  # nsysql/__init__.py and the Export users get from nsysql.open()
    "commands": ["commands", "commands.*"],
    "cli": ["cli", "__main__"],
}
RANK = {name: rank for rank, names in enumerate(LAYERS.values()) for name in names}


def modules() -> dict[str, Path]:
    """Dotted name (`nsysql.commands.gaps`) -> file, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = modules()


def layer_rank(module: str) -> int:
    short = module.removeprefix("nsysql.") if module != "nsysql" else "nsysql"
    if short in RANK:
        return RANK[short]
    if short.startswith("commands."):
        return RANK["commands.*"]
    raise KeyError(f"{module} has no layer in tests/test_layers.py")


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
            for alias in node.names:  # `from . import catalog` imports the module nsysql.catalog
                found.append((f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES else target,
                              node.lineno))
    return [(name, line) for name, line in found if name.split(".")[0] in ("nsysql", "capture")]


GRAPH = {m: imports(m, p) for m, p in MODULES.items()}


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_rank(module)


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
    assert users == {"nsysql.commands.capture"}


def test_the_checker_sees_uphill_imports(tmp_path):
    """The parser resolves relative imports the way Python does (guards the tests above against passing empty)."""
    path = tmp_path / "probe.py"
    path.write_text("from . import catalog\nfrom .commands.common import gather\nfrom .. import open\n"
                    "import nsysql.render\n")
    assert [t for t, _ in imports("nsysql.export", path)] == [
        "nsysql.catalog", "nsysql.commands.common", "nsysql.render"]
    path.write_text("from .common import gather\nfrom .. import open, catalog\n")
    assert [t for t, _ in imports("nsysql.commands.gaps", path)] == [
        "nsysql.commands.common", "nsysql", "nsysql.catalog"]
    assert layer_rank("nsysql.commands.common") > layer_rank("nsysql.summary") > layer_rank("nsysql.export")


def test_features_are_methods_of_the_facade_not_of_the_core_handle():
    import nsysql
    from nsysql import api, export
    assert nsysql.Export is api.Export and issubclass(api.Export, export.Export)
    for method in ("sanity", "diff", "overview", "findings", "to_duckdb", "to_parquet"):
        assert method in vars(api.Export) and not hasattr(export.Export, method), method


# -- commands: every module registered, and a broken one is an error ------------------------------------------
def test_every_command_module_is_registered():
    from nsysql import cli
    files = {p.stem for p in (PACKAGE / "commands").glob("*.py")
             if "def register(" in p.read_text(encoding="utf-8")}
    assert set(cli.COMMAND_MODULES) == files


def test_a_command_module_that_fails_to_import_is_an_error():
    import typer

    from nsysql import cli
    with pytest.raises(ModuleNotFoundError):
        cli.register_commands(typer.Typer(), ("no_such_command",))


def test_capture_is_left_out_only_without_the_capture_package(monkeypatch):
    import importlib

    import typer

    from nsysql import cli
    real = importlib.import_module

    def without(missing: str):
        def fake(name, *args):
            if name == "nsysql.commands.capture":
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
