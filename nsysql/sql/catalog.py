"""The versioned SQL files under queries/: discovery and header parsing.

Every file starts with a header (see docs/STYLE in the repo):

    -- nsysql: reports.cuda_api_sum v1
    -- purpose: CUDA API calls summed by name, as `nsys stats -r cuda_api_sum`.
    -- requires: runtime
    -- params: none
    -- columns:
    --   Time (%) | DOUBLE | pct | 1
    --   Total Time (ns) | BIGINT | ns

A column line is `name | type | unit [| decimals printed]`. The id is the file's
path below queries/ with dots (`reports/cuda_api_sum.sql` -> `reports.cuda_api_sum`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

from nsysql.errors import NsysqlError

_HEADER = re.compile(r"^--\s*nsysql:\s*(?P<id>[\w.]+)\s+v(?P<version>\d+)\s*$")
PARAM_REF = re.compile(r"\$([A-Za-z_]\w*)")  # a $parameter in a query's SQL


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT = _NoDefault()  # a parameter whose header states no default: the caller must give it


@dataclass(frozen=True)
class Param:
    """A $parameter as the header's `params:` line declares it: `$name TYPE [default VALUE] [(what it means)]`,
    the default as a Python value (NO_DEFAULT where none is stated)."""
    name: str
    type: str
    default: object = NO_DEFAULT
    help: str = ""

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    unit: str
    decimals: int | None = None


@dataclass(frozen=True)
class Query:
    id: str
    version: int
    purpose: str
    requires: tuple[str, ...]
    params: tuple[Param, ...]
    columns: tuple[Column, ...]
    sql: str
    path: str
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def name(self) -> str:
        return self.id.rsplit(".", 1)[-1]

    @property
    def param_names(self) -> list[str]:
        """The $parameters the SQL uses (comments ignored), sorted."""
        return sorted(set(PARAM_REF.findall(strip_comments(self.sql))))

    @property
    def optional(self) -> tuple[str | tuple[str, ...], ...]:
        """Presentation: the columns a narrow table hides first, in order (a tuple goes together), from `optional:`."""
        return parse_optional(self.meta.get("optional", ""), self.path)

    @property
    def text_min(self) -> dict[str, int]:
        """Presentation: the width a text column keeps before optional columns are hidden, from `text-min:`."""
        return {m[1]: int(m[2]) for m in _TEXT_MIN.finditer(self.meta.get("text-min", ""))}

    @property
    def unit_groups(self) -> tuple[tuple[str, ...], ...]:
        """Presentation: duration columns a table shows in one shared unit (they add up), from `unit-groups:`."""
        return tuple(g for g in parse_optional(self.meta.get("unit-groups", ""), self.path) if isinstance(g, tuple))

    def param(self, name: str) -> Param | None:
        """The header's declaration of $name, if it has one."""
        return next((p for p in self.params if p.name == name), None)

    def defaults(self) -> dict[str, object]:
        """Each $param the SQL uses -> its header default (NO_DEFAULT where the header states none)."""
        return {n: p.default if (p := self.param(n)) else NO_DEFAULT for n in self.param_names}

    def stated_defaults(self) -> dict[str, object]:
        """The $params the SQL uses whose header states a default -> that default."""
        return {n: v for n, v in self.defaults().items() if v is not NO_DEFAULT}

    @property
    def args(self) -> dict[str, dict[str, object]]:
        """NVIDIA-style report arguments (`NAME:arg`) from the header's `args:` line, each -> the $params it sets:
        `-- args: base -> name_form = 'base'; nvtx-name -> nvtx_name = true`."""
        found: dict[str, dict[str, object]] = {}
        for item in self.meta.get("args", "").split(";"):
            arg, sep, setting = item.partition("->")
            if not sep:
                continue
            param, _, value = setting.partition("=")
            found.setdefault(arg.strip(), {})[param.strip().lstrip("$")] = header_literal(value.strip())
        return found

    def bound_params(self, values: dict) -> dict:
        """Only the parameters this SQL names (DuckDB rejects unused ones)."""
        wanted = set(self.param_names)
        missing = wanted - set(values)
        if missing:
            raise NsysqlError(f"query {self.id} needs parameter(s) {', '.join(sorted(missing))}")
        return {k: values[k] for k in wanted}


def header_literal(text: str):
    """A value written in a SQL header ('x', true, null, 10, 0.5) as Python: str, bool, None, int, float or the
    text itself. The one reader of header values (params defaults, report arguments)."""
    if text[:1] in "'\"" and text[-1:] == text[:1] and len(text) >= 2:
        return text[1:-1]
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text.lower() == "null":
        return None
    return typed_value(text)


def typed_value(text: str) -> int | float | str:
    """An int if `text` parses as one, else a float, else the text itself."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def split_report_spec(spec: str) -> tuple[str, list[str]]:
    """`cuda_gpu_kern_sum:base:nvtx-name` -> ('cuda_gpu_kern_sum', ['base', 'nvtx-name']), as `nsys stats -r`."""
    name, *args = spec.split(":")
    return name, [a for a in args if a]


def report_query(spec: str) -> Query:
    """The report a `NAME[:arg...]` spec names; an unknown name is one clear error."""
    name = split_report_spec(spec)[0]
    if f"reports.{name}" not in all_queries():
        raise NsysqlError(f"no report named {name!r}; `nsysql reports` lists them")
    return get(f"reports.{name}")


def valued_args(query: Query) -> list[str]:
    """A report's whole-number $params that no flag argument sets: each is also NVIDIA's `NAME:param=N` argument
    (`um_sum:rows=5`)."""
    set_by_flags = {param for setting in query.args.values() for param in setting}
    return [n for n in query.param_names if n not in set_by_flags and (p := query.param(n)) and p.type == "BIGINT"]


def report_params(query: Query, args: list[str]) -> dict[str, object]:
    """The $params that NVIDIA-style report arguments set; an unknown or conflicting argument is one clear error."""
    known = query.args
    params: dict[str, object] = {}
    given: dict[str, str] = {}
    valued = valued_args(query)
    for arg in args:
        key, eq, text = arg.partition("=")
        if eq and key in valued:  # NVIDIA's `NAME:rows=5`: a whole-number $param of the same name
            try:
                params[key], given[key] = int(text), arg
            except ValueError:
                raise NsysqlError(f"report {query.name}: argument {key}= takes a whole number, not {text!r}") from None
            continue
        if arg not in known:
            names = [f":{a}" for a in known] + [f":{n}=N" for n in valued]
            valid = ", ".join(names) if names else "none"
            raise NsysqlError(f"report {query.name} has no argument {arg!r}; valid arguments: {valid}")
        for param, value in known[arg].items():
            if param in params and params[param] != value:
                raise NsysqlError(f"report {query.name}: arguments :{given[param]} and :{arg} exclude each other")
            params[param], given[param] = value, arg
    return params


def check_report_params(query: Query, params: dict, defaults: dict) -> None:
    """Keyword $params of a report: each one the SQL takes, and, where report arguments set it, one of the values
    they set or its default (name_form: 'demangled', 'base' or 'mangled'); otherwise one clear error."""
    for name, value in params.items():
        if name not in query.param_names:
            takes = ", ".join(query.param_names) or "none"
            raise NsysqlError(f"report {query.name} has no parameter {name!r}; it takes: {takes}")
        allowed = [defaults.get(name)] + [v for sets in query.args.values() for p, v in sets.items() if p == name]
        if len(allowed) > 1 and value not in allowed:
            raise NsysqlError(f"report {query.name}: {name} must be one of {', '.join(map(repr, allowed))}, "
                              f"not {value!r}")


def strip_comments(sql: str) -> str:
    """The SQL without its `--` comments (the header included)."""
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())


HEADER_KEYS = ("purpose", "requires", "params", "notes", "columns", "args", "provides", "storage-of", "rows", "built",
               "command", "optional", "text-min", "unit-groups", "empty")
"""Every key a header may have (docs/query-headers.md says what each means); any other is an error."""
BUILT_ON_FIRST_USE = "on first use"  # the one value of `built:` (a normalized table a cache's first open leaves out)
REQUIRED_KEYS = ("purpose", "requires", "params", "columns")
# `command: NAME [(after COMMAND)]` in an analysis makes it a table command of its own (nsysql/sql/analyses.py)
COMMAND_LINE = re.compile(r"(?P<name>[a-z][a-z0-9_-]*)(?:\s+\(after\s+(?P<after>[a-z][a-z0-9_-]*)\))?")
_KEY_LINE = re.compile(r"^-- (?P<key>[a-z][a-z-]*):(?P<value>.*)$")
_MORE_LINE = re.compile(r"^--  +(?P<text>\S.*)$")


class HeaderError(ValueError):
    """A query file's header breaks the contract (docs/query-headers.md): names the file and line."""


def parse(text: str, path: str) -> Query:
    """A query file's header, strictly (docs/query-headers.md): `-- key: value` lines with known keys, each value
    continued by lines indented two or more spaces after `--` (joined with newlines), `columns:` followed by one
    indented `name | TYPE | unit [| decimals]` line per column. The header ends at the first line that is not a
    comment. Anything else is a HeaderError naming the file and line."""
    lines = text.splitlines()
    m = _HEADER.match(lines[0]) if lines else None
    if not m:
        raise HeaderError(f"{path}:1: first line must be '-- nsysql: <id> v<N>'")
    values: dict[str, list[str]] = {}
    columns: list[Column] = []
    key = ""
    for number, line in enumerate(lines[1:], start=2):
        if not line.startswith("--"):
            break
        where = f"{path}:{number}"
        km, more = _KEY_LINE.match(line), _MORE_LINE.match(line)
        if km:
            key = km["key"]
            if key not in HEADER_KEYS:
                raise HeaderError(f"{where}: unknown header key {key!r}; known keys: {', '.join(HEADER_KEYS)}")
            if key in values:
                raise HeaderError(f"{where}: header key {key!r} given twice")
            first = km["value"].strip()
            if key == "columns" and first and not (first == "none" or first.startswith("(")):
                raise HeaderError(f"{where}: 'columns:' stands alone with one column per indented line below it, "
                                  "or says `none` or `(why)` for a file that returns no rows (DDL)")
            if key == "command" and not COMMAND_LINE.fullmatch(first):
                raise HeaderError(f"{where}: 'command:' says `NAME` or `NAME (after COMMAND)`, the table command "
                                  f"this analysis becomes, got {first[:60]!r}")
            if key == "built" and not first.startswith(BUILT_ON_FIRST_USE):
                raise HeaderError(f"{where}: 'built:' says `{BUILT_ON_FIRST_USE} (why)`; a table built on a "
                                  "cache's first open has no such line")
            values[key] = [first] if first else []
        elif more and key == "columns":
            columns.append(_column(more["text"], where))
        elif more and key:
            values[key].append(more["text"].strip())
        else:
            raise HeaderError(f"{where}: expected '-- key: value' or a continuation line indented two or more "
                              f"spaces after '--', got {line[:60]!r}")
    meta = {k: "\n".join(v) for k, v in values.items() if k != "columns"}
    missing = [k for k in REQUIRED_KEYS if k not in values]
    if missing:
        raise HeaderError(f"{path}: header lacks {', '.join(repr(k) for k in missing)}")
    if not columns and not values["columns"]:
        raise HeaderError(f"{path}: header lists no columns (`columns: none` for a file that returns no rows)")
    requires = tuple(r.strip() for r in meta["requires"].split(",") if r.strip() and r.strip() != "none")
    q = Query(id=m["id"], version=int(m["version"]), purpose=meta["purpose"],
              requires=requires, params=parse_params(meta["params"], f"{path}: params"), columns=tuple(columns),
              sql=text, path=path, meta=meta)
    names = {c.name for c in q.columns}
    hinted = [n for o in parse_optional(meta.get("optional", ""), path) for n in ((o,) if isinstance(o, str) else o)]
    hinted += list(q.text_min)
    groups = parse_optional(meta.get("unit-groups", ""), path)
    if any(isinstance(g, str) for g in groups):
        raise HeaderError(f"{path}: 'unit-groups:' lists groups in parentheses: (\"a_ns\", \"b_ns\"), ...")
    hinted += [n for g in groups for n in g]
    if meta.get("text-min", "").strip() and not q.text_min:
        raise HeaderError(f"{path}: 'text-min:' is `\"column\" WIDTH`, comma-separated")
    if [n for n in hinted if n not in names]:
        raise HeaderError(f"{path}: presentation hints name columns it does not have: "
                          f"{', '.join(n for n in hinted if n not in names)}")
    declared = {p.name for p in q.params}
    if set(q.param_names) != declared:
        undeclared, unused = sorted(set(q.param_names) - declared), sorted(declared - set(q.param_names))
        raise HeaderError(f"{path}: the params line must declare exactly the $parameters the SQL uses"
                          + (f"; undeclared: {', '.join(undeclared)}" if undeclared else "")
                          + (f"; unused: {', '.join(unused)}" if unused else ""))
    return q


_TEXT_MIN = re.compile(r'"([^"]+)"\s+(\d+)')


def parse_optional(text: str, where: str) -> tuple[str | tuple[str, ...], ...]:
    """An `optional:` value: `"a", ("b", "c"), "d"`: quoted column names, a parenthesized group hidden together."""
    import ast
    if not text.strip():
        return ()
    try:
        value = ast.literal_eval(f"({text},)")
    except (SyntaxError, ValueError):
        raise HeaderError(f"{where}: 'optional:' lists quoted column names, a group in parentheses, got "
                          f"{text[:60]!r}") from None
    if not all(isinstance(v, str) or (isinstance(v, tuple) and all(isinstance(x, str) for x in v)) for v in value):
        raise HeaderError(f"{where}: 'optional:' lists quoted column names, a group in parentheses")
    return value


_PARAM_ITEM = re.compile(r"\$?(?P<name>[A-Za-z_]\w*)\s+(?P<type>[A-Z]+)"
                         r"(?:\s+default\s+(?P<default>'[^']*'|\"[^\"]*\"|[^\s(,]+))?\s*(?:\((?P<help>.*)\))?", re.S)


def parse_params(text: str, where: str) -> tuple[Param, ...]:
    """A `params:` value: `none`, or `$name TYPE [default VALUE] [(what it means)]` items separated by commas
    outside parentheses and quotes. The one reader of a header's parameters."""
    text = text.strip()
    if text in ("", "none"):
        return ()
    items, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"" and depth == 0:  # a quoted default; an apostrophe in the help (the thread's) is text
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    params = []
    for item in items:
        m = _PARAM_ITEM.fullmatch(item.strip())
        if not m:
            raise HeaderError(f"{where}: a parameter is '$name TYPE [default VALUE] [(what it means)]', "
                              f"got {item.strip()[:60]!r}")
        default = header_literal(m["default"]) if m["default"] is not None else NO_DEFAULT
        params.append(Param(m["name"], m["type"], default, " ".join((m["help"] or "").split())))
    return tuple(params)


def _column(text: str, where: str) -> Column:
    parts = [p.strip() for p in text.split("|")]
    if len(parts) not in (3, 4) or not all(parts[:3]):
        raise HeaderError(f"{where}: a column line is 'name | TYPE | unit [| decimals]', got {text[:60]!r}")
    decimals = parts[3] if len(parts) == 4 else ""
    if decimals and not decimals.isdigit():
        raise HeaderError(f"{where}: a column's decimals are a whole number, got {decimals!r}")
    name = text.split("|")[0].strip()
    if len(name) > 1 and name[0] == name[-1] == '"':  # a quoted name keeps its spaces (NVIDIA's " GPU Page Faults")
        parts[0] = name[1:-1]
    return Column(parts[0], parts[1], parts[2], int(decimals) if decimals else None)


def _root():
    try:
        root = resources.files("nsysql.queries")
        if root.joinpath("reports").is_dir():
            return root
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[2] / "queries"  # running from a source checkout


def _walk(node, prefix: str):
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        if child.is_dir() and not child.name.startswith(("_", ".")):
            yield from _walk(child, f"{prefix}{child.name}/")
        elif child.name.endswith(".sql"):
            yield f"{prefix}{child.name}", child


@lru_cache(maxsize=None)
def all_queries() -> dict[str, Query]:
    found = {}
    for rel, node in _walk(_root(), ""):
        q = parse(node.read_text(encoding="utf-8"), rel)
        expected = rel[:-4].replace("/", ".")
        if q.id != expected:
            raise ValueError(f"{rel}: header id {q.id!r} should be {expected!r}")
        found[q.id] = q
    return found


def get(query_id: str) -> Query:
    try:
        return all_queries()[query_id]
    except KeyError:
        raise NsysqlError(f"no query named {query_id!r}") from None


def group(prefix: str) -> list[Query]:
    """Queries whose id starts with `prefix.` (e.g. 'reports'), in name order."""
    return [q for qid, q in sorted(all_queries().items()) if qid.startswith(prefix + ".")]


def decimals(query_id: str) -> dict[str, int]:
    """Decimals each float column prints with, from the query's SQL header."""
    return {c.name: c.decimals for c in get(query_id).columns if c.decimals is not None}


# -- extension point (for declared analyses, nsysql/sql/analyses.py): query files from outside queries/ ------------
def add_queries(directory: str | Path) -> list[Query]:
    """Add the .sql files under `directory` to the catalog, each with its header and the id its path below
    `directory` gives (`analysis/mine.sql` -> `analysis.mine`), as under queries/; a query nsysql already has keeps
    its file (an id taken is an error). Returns the queries added."""
    found = all_queries()
    root = Path(directory)
    added = []
    for rel, node in _walk(root, ""):
        q = parse(node.read_text(encoding="utf-8"), str(root / rel))
        expected = rel[:-4].replace("/", ".")
        if q.id != expected:
            raise NsysqlError(f"{root / rel}: header id {q.id!r} should be {expected!r}")
        if q.id in found and found[q.id].path != q.path:
            raise NsysqlError(f"{root / rel}: nsysql already has a query {q.id!r} ({found[q.id].path})")
        added.append(q)
    found.update((q.id, q) for q in added)
    return added


def requirements_first(queries: list[Query]) -> list[Query]:
    """The queries in their order, except that one another reads (`requires:` it, directly or through others of
    the list) comes first: a view needs the views it selects from, a DuckDB macro the macros it calls, when made."""
    by_id = {q.id: q for q in queries}
    ordered: list[Query] = []

    def visit(q: Query) -> None:
        if q in ordered:
            return
        for dep in q.requires:
            if dep in by_id and dep != q.id:
                visit(by_id[dep])
        ordered.append(q)

    for q in queries:
        visit(q)
    return ordered
