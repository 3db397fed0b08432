"""Every NVIDIA expert rule, cell by cell against NVIDIA's own `nsys analyze -r RULE -f csv` of the same export.

fixtures/<name>/nsys-analyze.log is NVIDIA's console output for the rules (default options): `PROCESSED` with a CSV
beside it, `PROCESSED (EMPTY RESULTS)` with an empty or no CSV (NVIDIA writes nothing, not even the header), or
`SKIPPED:` when the export lacks the rule's table (nsysql: a MissingDataError, one line naming the table)."""
from __future__ import annotations

import csv
import io
import re

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app
from nsysql.errors import MissingDataError
from nsysql.present.render import to_csv
from nsysql.sql import catalog, rules

from conftest import golden_exports

RULES = rules.names()  # the files of queries/rules/: a new rule is compared as soon as its SQL and goldens exist


def nvidia_outcomes(log_path) -> dict[str, str]:
    """rule -> 'rows', 'empty' or 'skipped', from NVIDIA's console log."""
    out, last = {}, None
    for line in log_path.read_text().splitlines():
        m = re.search(r"rules/(\w+)\.py\] to \[.*\]\.\.\. PROCESSED( \(EMPTY RESULTS\))?", line)
        if m:
            last = m[1]
            out[last] = "empty" if m[2] else "rows"
        elif line.startswith("SKIPPED:") and last:
            out[last] = "skipped"
    return out


CASES = [(ident, csv_dir, rule, outcome) for ident, _, csv_dir in golden_exports()
         if (csv_dir / "nsys-analyze.log").exists()
         for rule, outcome in nvidia_outcomes(csv_dir / "nsys-analyze.log").items() if rule in RULES]


def rule_csv(df, rule: str) -> str:
    """What `nsysql analyze RULE -f csv` prints: nothing for no rows, as NVIDIA."""
    return to_csv(df, catalog.decimals(f"rules.{rule}")) if df.height else ""


def test_every_rule_is_here_and_compared():
    assert len(RULES) >= 6 and "gpu_gaps" in RULES
    assert CASES, "no fixture with NVIDIA's nsys-analyze.log"
    for rule in RULES:
        assert any(c[2] == rule and c[3] == "rows" for c in CASES) or rule in ("cuda_memcpy_sync",
                                                                                 "cuda_memset_sync"), rule
        assert any(c[2] == rule for c in CASES), f"no NVIDIA output for {rule}"


def test_rule_headers():
    for rule in RULES:
        q = catalog.get(f"rules.{rule}")
        assert q.purpose and "identical to `nsys analyze -r " + rule in q.purpose
        assert "rows" in rules.options(rule) and rules.options(rule)["rows"].default == 50
    assert rules.options("gpu_gaps")["gap"].default == 500
    assert {k: o.default for k, o in rules.options("gpu_time_util").items()} == {"threshold": 50, "chunks": 30,
                                                                                 "rows": 50}


@pytest.mark.parametrize("ident,csv_dir,rule,outcome", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_rule_matches_nvidia_csv(opened, ident, csv_dir, rule, outcome):
    if outcome == "skipped":
        with pytest.raises(MissingDataError):
            opened[ident].analyze(rule)
        return
    golden = csv_dir / f"nsys-analyze_{rule}.csv"
    theirs_text = golden.read_text() if golden.exists() else ""
    mine_text = rule_csv(opened[ident].analyze(rule), rule)
    if outcome == "empty":
        assert theirs_text == "" and mine_text == ""
        return
    mine = list(csv.reader(io.StringIO(mine_text)))
    theirs = list(csv.reader(io.StringIO(theirs_text)))
    assert mine[0] == theirs[0], "header"
    assert len(mine) == len(theirs), "row count"
    for i, (a, b) in enumerate(zip(mine, theirs)):
        assert a == b, f"row {i} differs"
    assert mine_text == theirs_text  # byte for byte too


def test_row_limit_and_options(opened):
    ident = next(c[0] for c in CASES if c[2] == "cuda_api_sync" and c[3] == "rows")
    ex = opened[ident]
    every = ex.analyze("cuda_api_sync", rows=-1)
    assert ex.analyze("cuda_api_sync").height == min(50, every.height)
    assert ex.analyze("cuda_api_sync", rows=3).equals(every.head(3))
    few = ex.analyze("gpu_gaps", gap=0, rows=-1)
    assert few.height >= ex.analyze("gpu_gaps").height
    assert (few["Duration (ns)"] > 0).all() and few["Row#"].to_list() == list(range(1, few.height + 1))
    assert few["Duration (ns)"].is_sorted(descending=True)
    with pytest.raises(nsysql.NsysqlError):
        ex.analyze("cuda_api_sync", gap=3)


runner = CliRunner()


def test_cli_rules_lists_every_rule_once():
    res = runner.invoke(app, ["rules"])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert [line.split()[0] for line in lines] == sorted(RULES)
    assert all(line.split()[1] == "v1" for line in lines)
    assert "--gap 500" in next(line for line in lines if line.startswith("gpu_gaps"))


def _gaps_case():
    return next(c for c in CASES if c[2] == "gpu_gaps" and c[3] == "rows")


def test_cli_analyze_gpu_gaps_csv_is_nvidias_byte_for_byte(export_files, cache_dir, tmp_path):
    ident, csv_dir, _, _ = _gaps_case()
    res = runner.invoke(app, ["analyze", "gpu_gaps", str(export_files[ident]), "-f", "csv",
                              "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0, res.output
    assert res.stdout == (csv_dir / "nsys-analyze_gpu_gaps.csv").read_text()
    out = tmp_path / "g.csv"
    res = runner.invoke(app, ["analyze", "gpu_gaps", str(export_files[ident]), "-f", "csv", "-o", str(out),
                              "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == (csv_dir / "nsys-analyze_gpu_gaps.csv").read_bytes()


def test_cli_analyze_with_an_option(opened, export_files, cache_dir):
    ident, _, _, _ = _gaps_case()
    res = runner.invoke(app, ["analyze", "gpu_gaps", str(export_files[ident]), "-f", "csv", "--gap", "10",
                              "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0, res.output
    assert res.stdout == rule_csv(opened[ident].analyze("gpu_gaps", gap=10), "gpu_gaps")
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert len(rows) > 1 and all(int(r["Duration (ns)"]) > 10_000_000 for r in rows)
    default = list(csv.DictReader(io.StringIO((_gaps_case()[1] / "nsys-analyze_gpu_gaps.csv").read_text())))
    assert len(rows) > len(default)


def test_cli_analyze_empty_and_bad_input(export_files, cache_dir):
    empty = next(c for c in CASES if c[2] == "gpu_gaps" and c[3] == "empty")
    res = runner.invoke(app, ["analyze", "gpu_gaps", str(export_files[empty[0]]), "-f", "csv",
                              "--cache-dir", str(cache_dir)])
    assert res.exit_code == 0 and res.stdout == ""
    path = str(export_files[_gaps_case()[0]])
    res = runner.invoke(app, ["analyze", "cuda_api_sync", path, "--gap", "3", "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1 and "no option gap" in res.output
    res = runner.invoke(app, ["analyze", "no_such_rule", path, "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1 and "nsysql rules" in res.output


def test_negative_option_is_one_line_error(export_files, cache_dir):
    from typer.testing import CliRunner

    from nsysql.cli.app import app
    res = CliRunner().invoke(app, ["analyze", "gpu_gaps", str(export_files["gpt-tiny-forward"]), "--gap", "-5",
                                   "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1 and res.output == "Error: rule gpu_gaps: --gap must be 0 or more, not -5\n"
