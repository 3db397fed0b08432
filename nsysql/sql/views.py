"""The catalog's reports and analyses as SQL views over the normalized tables.

Every query in the `reports` and `analysis` groups becomes a view whose SQL is the query file's
text (DuckDB stores views re-formatted, so the original text is kept in `nsysql_views.sql`).
A view is named after its query (`reports.nvtx_gpu_proj_sum` -> `nvtx_gpu_proj_sum`) unless
that name is already a normalized table or an earlier view, then `<group>_<name>`
(`analysis.memcpy` -> `analysis_memcpy`, since `memcpy` is a table). Reports come first, so
they always keep NVIDIA's report names.

A view cannot take parameters: a query using `$name` gets its header's default
(`-- params: top BIGINT default 10`, or `top = 10`) as a literal, and without one it is left
out with a note saying so. A public query with parameters is also a table macro of the view's
name whose parameters are named and default to the header's (`SELECT * FROM layers(depth := 2)`).

Private queries (file name starting with `_`, docs/query-headers.md) are views only as the inputs of
public ones: never documented in `nsysql_views`, no note when they cannot be views, no macro.

A view that other views read (`steps`, `steady_steps`, `_step_busy`, ...) would be computed again inside each of
them, for every reader at every depth: on a 1.7M-kernel export `SELECT * FROM gpu_idle_in_step` took 105 s that way
(docs/performance-history.md).
In a database file (`store_inputs=True`, `nsysql db`) such a view reads a table of its rows, computed once when
the file is written (`nsysql_input_<view>`); its readers then cost what `nsysql` itself spends on them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb

from nsysql.sql import catalog
from nsysql.sql.engine import quote_ident, quote_literal

VIEW_GROUPS = ("reports", "analysis", "findings")
STORED_INPUT = "nsysql_input_"  # + a view's name: the table of its rows that a database file keeps (store_inputs)


@dataclass(frozen=True)
class CatalogView:
    query: catalog.Query
    view_name: str
    sql: str | None  # what CREATE VIEW gets; None: it cannot be a view (see note)
    note: str = ""

    @property
    def description(self) -> str:
        return self.query.purpose

    @property
    def private(self) -> bool:
        return self.query.name.startswith("_")


def catalog_views(taken: set[str]) -> list[CatalogView]:
    """Every report and analysis as a view; `taken` holds the normalized relations' names."""
    used = {t.lower() for t in taken}
    views = []
    needed = _private_inputs()
    for group in VIEW_GROUPS:
        for q in catalog.requirements_first(catalog.group(group)):  # a view needs the views it reads
            if q.name.startswith("_") and q.id not in needed:
                continue
            name, notes = q.name, []
            if name.lower() in used:
                notes.append(f"named {group}_{name}: {name} is already a table or view")
                name = f"{group}_{name}"
            used.add(name.lower())
            sql, param_note = _with_defaults(q)
            if sql is None and q.name.startswith("_"):
                continue  # a private helper that takes parameters: nsysql runs it itself, nothing reads its view
            if param_note:
                notes.append(param_note)
            views.append(CatalogView(q, name, sql, "; ".join(notes)))
    return views


def _private_inputs() -> set[str]:
    """The private queries that public views read, directly or through another private one."""
    found: set[str] = set()
    pending = [r for g in VIEW_GROUPS for q in catalog.group(g) if not q.name.startswith("_") for r in q.requires]
    while pending:
        qid = pending.pop()
        if qid not in found and qid.rsplit(".", 1)[-1].startswith("_") and qid in catalog.all_queries():
            found.add(qid)
            pending += catalog.get(qid).requires
    return found


def named_in(views: list[CatalogView], sql: str) -> list[CatalogView]:
    """The views whose name is a word of `sql`, and the views those read (their `requires`), in `views`' order (a
    view is created after the views it reads). A word that only looks like a name costs a view, nothing more."""
    words = {w.lower() for w in re.findall(r"[A-Za-z_]\w*", sql)}
    by_id = {v.query.id: v for v in views}
    chosen: set[str] = set()
    pending = [v.query.id for v in views if v.view_name.lower() in words]
    while pending:
        qid = pending.pop()
        if qid not in chosen:
            chosen.add(qid)
            pending += [r for r in by_id[qid].query.requires if r in by_id]
    return [v for v in views if v.query.id in chosen]


def readers(views: list[CatalogView]) -> dict[str, int]:
    """Query id of each view that other views in `views` read (their header's `requires`) -> how many read it."""
    made = {v.query.id for v in views if v.sql is not None}
    count: dict[str, int] = {}
    for v in views:
        for qid in v.query.requires:
            if qid in made:
                count[qid] = count.get(qid, 0) + 1
    return count


def create_views(con: duckdb.DuckDBPyConnection, views: list[CatalogView], *, temporary: bool = False,
                 document: bool = False, store_inputs: bool = False) -> list[CatalogView]:
    """CREATE each view on `con`; returns the views with notes for those that failed or differ from their header.
    `store_inputs`: a view that others read reads a table of its rows instead (module docstring)."""
    kind = "TEMP VIEW" if temporary else "VIEW"
    read_by = readers(views) if store_inputs else {}
    done = []
    for v in views:
        note = v.note
        if v.sql is not None:
            try:
                if v.query.id in read_by:
                    note = _join(note, _store_input(con, v, _body(v.sql), read_by[v.query.id], document=document))
                else:
                    con.execute(f"CREATE {kind} {quote_ident(v.view_name)} AS {_body(v.sql)}")
            except duckdb.Error as exc:
                if v.private:
                    continue  # e.g. analysis._diff, which reads tables nsysql makes while it runs
                note = _join(note, f"not created: {str(exc).splitlines()[0]}")
                v = CatalogView(v.query, v.view_name, None, note)
            else:
                got = con.sql(f"SELECT * FROM {quote_ident(v.view_name)}").columns  # bound, not run
                want = [c.name for c in v.query.columns]
                if want and got != want:
                    note = _join(note, f"columns {got} differ from its header {want}")
                if document:
                    _comment(con, "VIEW", v.view_name, v.query)
                v = CatalogView(v.query, v.view_name, v.sql, note)
        done.append(v)
    return done


def _store_input(con: duckdb.DuckDBPyConnection, v: CatalogView, body: str, reader_count: int, *,
                 document: bool) -> str:
    """The view `v` over a table of its rows (`body` run once; STORED_INPUT + its name); returns the note saying so."""
    table = f"{STORED_INPUT}{v.view_name}"
    con.execute(f"CREATE TABLE {quote_ident(table)} AS {body}")
    con.execute(f"CREATE VIEW {quote_ident(v.view_name)} AS SELECT * FROM {quote_ident(table)}")
    others = f"{reader_count} other view{'s' if reader_count != 1 else ''}"
    if document:
        _comment(con, "TABLE", table, v.query)  # its columns' type and unit, as every table of the file has them
        con.execute(f"COMMENT ON TABLE {quote_ident(table)} IS " + quote_literal(
            f"The rows of view {v.view_name} ({v.query.id} v{v.query.version}) when this database was written, "
            f"which {others} read instead of computing it again"))
    return f"reads table {table}: its rows, computed when the database was written (read by {others})"


def create_macros(con: duckdb.DuckDBPyConnection, views: list[CatalogView]) -> list[CatalogView]:
    """A table macro for each created public view whose query takes parameters: named parameters with the
    header's defaults, so `SELECT * FROM layers(depth := 2)` runs in the stock duckdb shell. Macros bind their
    tables when called (in a several-export file: after `USE <schema>`). Returns the views, a failure noted."""
    done = []
    for v in views:
        names = v.query.param_names
        if v.sql is not None and names and not v.private:
            defaults = v.query.defaults()
            signature = ", ".join(f"{quote_ident(n)} := {sql_literal(defaults[n])}" for n in names)
            inner = quote_ident(f"_{v.view_name}_body")
            try:
                _create_body_macro(con, inner, v.query.sql, names)
                con.execute(f"CREATE MACRO {quote_ident(v.view_name)}({signature}) AS TABLE "
                            f"SELECT * FROM {inner}({', '.join(quote_ident(n) for n in names)})")
            except duckdb.Error as exc:
                v = CatalogView(v.query, v.view_name, v.sql,
                                _join(v.note, f"no table macro: {str(exc).splitlines()[0]}"))
        done.append(v)
    return done


def _create_body_macro(con: duckdb.DuckDBPyConnection, name: str, sql: str, names: list[str]) -> None:
    """The query as a macro of positional parameters named `nsysql_param_<name>` (a macro's parameter would hide a
    column of its name). DuckDB binds the body when the macro is made and rejects a parameter where a grouped query
    needs a constant (`HAVING count(*) >= $min_run`): then the values come from a one-row CTE instead."""
    params = ", ".join(f"nsysql_param_{n}" for n in names)
    try:
        con.execute(f"CREATE MACRO {name}({params}) AS TABLE "
                    f"{catalog.PARAM_REF.sub(lambda m: f'nsysql_param_{m.group(1)}', _body(sql))}")
        return
    except duckdb.BinderException:
        pass
    args = "nsysql_args AS (SELECT " + ", ".join(f"nsysql_param_{n} AS {quote_ident(n)}" for n in names) + ")"
    body = catalog.PARAM_REF.sub(lambda m: f"(SELECT {quote_ident(m.group(1))} FROM nsysql_args)", _body(sql))
    lines = body.splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("--"))
    head = re.match(r"\s*WITH(\s+RECURSIVE)?(\s|$)", lines[first], re.IGNORECASE)
    if head:
        lines[first] = f"{lines[first][:head.end()].rstrip()} {args}, {lines[first][head.end():]}"
    else:
        lines[first] = f"WITH {args} {lines[first]}"
    con.execute(f"CREATE MACRO {name}({params}) AS TABLE " + "\n".join(lines))


def document_tables(con: duckdb.DuckDBPyConnection, view_set: str) -> None:
    """COMMENT ON the normalized tables (and nvtx_path) from their normalize query headers."""
    kinds = dict(con.execute(
        "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'main'").fetchall())
    for q in catalog.group(f"normalize.{view_set}"):
        if q.name in kinds and q.columns:
            _comment(con, "VIEW" if kinds[q.name] == "VIEW" else "TABLE", q.name, q)


def _comment(con, kind: str, name: str, q: catalog.Query) -> None:
    # COMMENT ON takes no bound parameters; the texts are our own SQL headers.
    con.execute(f"COMMENT ON {kind} {quote_ident(name)} IS {quote_literal(f'{q.id} v{q.version}: {q.purpose}')}")
    present = {d[0] for d in con.execute(f"SELECT * FROM {quote_ident(name)} LIMIT 0").description}
    for c in q.columns:
        if c.name in present:
            con.execute(f"COMMENT ON COLUMN {quote_ident(name)}.{quote_ident(c.name)} IS "
                        f"{quote_literal(f'{c.type} | {c.unit}')}")


def _body(sql: str) -> str:
    """The query text without its final semicolon (CREATE VIEW ... AS takes one statement)."""
    text = sql.rstrip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    return text


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


def _with_defaults(q: catalog.Query) -> tuple[str | None, str]:
    """The SQL with each $param replaced by its header default, or None when one has no default."""
    defaults = q.defaults()
    if not defaults:
        return q.sql, ""
    missing = [n for n, d in defaults.items() if d is catalog.NO_DEFAULT]
    if missing:
        return None, (f"not a view: needs parameter(s) {', '.join(missing)} and its header gives no default; "
                      f"run it with `nsysql sql` or Export.run('{q.id}', ...)")
    literals = {n: sql_literal(v) for n, v in defaults.items()}
    sql = catalog.PARAM_REF.sub(lambda m: literals.get(m.group(1), m.group(0)), q.sql)
    return sql, "parameters fixed at their header defaults: " + ", ".join(f"{n}={literals[n]}" for n in literals)


def sql_literal(value) -> str:
    """A SQL literal for a default from our own headers (never for user input, which is bound)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    return quote_literal(str(value))
