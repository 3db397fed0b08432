"""`nsysql recipe` against NVIDIA's recipes (`nsys recipe NAME`, Nsight Systems 2025.3.1), file by file and cell by cell.

The goldens are NVIDIA's outputs on the reports whose SQLite exports are the fixtures (scripts/make_recipe_goldens.sh):
fixtures/<fixture>/nsys-recipe/<recipe>[-variant]/ and fixtures/nsys-recipe-multi/<set>/<recipe>[-variant]/, each
with NVIDIA's exact command line in command.txt. The options of each run here are read from that command line, the
inputs from its --input reports (the export of report R.nsys-rep is the fixture whose own export was made from R),
so every golden folder is a test, and nothing expected is written here. For each of NVIDIA's Parquet files the test
compares the pandas metadata (all but the `creator`), the Parquet schema (column names and types), the row count and
every cell (integers and floats alike exactly; NVIDIA's NaN and a null both read as pandas' NaN). A folder without
Parquet files is one where NVIDIA's recipe wrote nothing ("No output generated"): there nsysql must refuse too.

The 2-GPU DDP report's export lives in ../shared (not in the repository): its goldens skip without it.
"""
from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.answers import recipe_files, recipes
from nsysql.cli.app import app
from nsysql.errors import NsysqlError, cli_text

from conftest import FIXTURES, REPO, unxz

# every NVIDIA recipe output recomputed: about a minute; dealt out first under xdist (conftest.py)
pytestmark = pytest.mark.heavy

runner = CliRunner()
DDP2 = REPO.parent / "shared" / "samples" / "ddp-2gpu" / "formats" / "export.sqlite.xz"
MULTI = FIXTURES / "nsys-recipe-multi"
REPORTS = {"gpt_decode_eager": FIXTURES / "gpt-decode-eager" / "export.sqlite.xz",
           "gpt_decode_graphs": FIXTURES / "gpt-decode-graphs" / "export.sqlite.xz",
           "gpt_decode_nonvtx": FIXTURES / "gpt-decode-nonvtx" / "export.sqlite.xz",
           "gpt_train_ckpt_accum": FIXTURES / "gpt-train-ckpt-accum" / "export.sqlite.xz",
           "ddp2": DDP2}
FLAGS = {"--name": "name", "--bins": "bins", "--filter-nvtx": "filter_nvtx", "--filter-time": "filter_time",
         "--filter-projected-nvtx": "filter_projected_nvtx"}
SWITCHES = {"--cumulative": "cumulative", "--disable-alignment": "disable_alignment"}


def golden_dirs() -> list[Path]:
    found = sorted(FIXTURES.glob("*/nsys-recipe/*/command.txt")) + sorted(MULTI.glob("*/*/command.txt"))
    return [p.parent for p in found]


def command(folder: Path) -> tuple[str, list[str], dict]:
    """(recipe, input report stems, options) of NVIDIA's command line in folder/command.txt."""
    words = shlex.split((folder / "command.txt").read_text(encoding="utf-8").splitlines()[0])
    assert words[:2] == ["nsys", "recipe"], words
    name, rest = words[2], words[3:]
    inputs, options, i = [], {}, 0
    while i < len(rest):
        word = rest[i]
        if word == "--input":
            i += 1
            while i < len(rest) and not rest[i].startswith("--"):
                inputs.append(rest[i].removesuffix(".nsys-rep"))
                i += 1
            continue
        if word in SWITCHES:
            options[SWITCHES[word]] = True
        elif word in FLAGS:
            value = rest[i + 1]
            options[FLAGS[word]] = int(value) if word == "--bins" else value
            i += 1
        elif word == "--output":
            i += 1
        else:
            raise AssertionError(f"{folder}: option {word} not understood by this test")
        i += 1
    return name, inputs, options


def produced(folder: Path) -> bool:
    return any(folder.glob("*.parquet"))


def case_id(folder: Path) -> str:
    return f"{folder.parent.parent.name if folder.parent.name == 'nsys-recipe' else folder.parent.name}/{folder.name}"


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict[str, Path]:
    """Report stem -> its export as plain SQLite (decompressed once), for those present."""
    out = tmp_path_factory.mktemp("recipe-exports")
    return {stem: unxz(path, out / f"{stem}.sqlite") for stem, path in REPORTS.items() if path.exists()}


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("recipe-cache")


def inputs_of(folder: Path, exports: dict[str, Path]) -> tuple[str, list[Path], dict]:
    name, stems, options = command(folder)
    missing = [s for s in stems if s not in exports]
    if missing:
        pytest.skip(f"the export of {', '.join(missing)} is not here (../shared/samples/ddp-2gpu)")
    return name, [exports[s] for s in stems], options


def parquet_facts(path: Path) -> tuple[dict, list, list]:
    """(pandas metadata without its creator, [(column, type)], rows) of a Parquet file."""
    con = duckdb.connect()
    meta = json.loads(dict(con.execute("SELECT decode(key), decode(value) FROM parquet_kv_metadata(?)",
                                       [str(path)]).fetchall())["pandas"])
    meta.pop("creator")
    schema = [(n, t) for n, t, depth in con.execute(
        "SELECT name, type, num_children FROM parquet_schema(?)", [str(path)]).fetchall() if depth is None]
    rows = con.execute("SELECT * FROM read_parquet(?)", [str(path)]).fetchall()
    return meta, schema, rows


def same_cell(ours, theirs) -> bool:
    if isinstance(theirs, float) and math.isnan(theirs):  # pandas reads NaN and null alike
        return ours is None or (isinstance(ours, float) and math.isnan(ours))
    if theirs is None:
        return ours is None or (isinstance(ours, float) and math.isnan(ours))
    return type(ours) is type(theirs) and ours == theirs


WITH_FILES = [d for d in golden_dirs() if produced(d)]
WITHOUT_FILES = [d for d in golden_dirs() if not produced(d)]


def test_every_golden_folder_is_read():
    """The goldens are there and each command line is understood (a new folder cannot be skipped silently)."""
    assert len(WITH_FILES) >= 40 and len(WITHOUT_FILES) >= 15
    for folder in golden_dirs():
        name, stems, _ = command(folder)
        assert name in recipes.RECIPES, folder
        assert all(s in REPORTS for s in stems), folder


@pytest.mark.parametrize("folder", WITH_FILES, ids=case_id)
def test_files_equal_nvidias(folder, exports, cache, tmp_path):
    name, paths, options = inputs_of(folder, exports)
    result = nsysql.recipe(name, paths, cache_dir=cache, **options)
    written = result.write(tmp_path / "out")
    theirs = sorted(p.name for p in folder.glob("*.parquet"))
    assert sorted(p.name for p in written) == theirs
    for file in theirs:
        meta, schema, rows = parquet_facts(tmp_path / "out" / file)
        g_meta, g_schema, g_rows = parquet_facts(folder / file)
        assert meta == g_meta, file
        assert schema == g_schema, file
        assert len(rows) == len(g_rows), file
        for i, (ours, gold) in enumerate(zip(rows, g_rows)):
            bad = [(schema[j][0], a, b) for j, (a, b) in enumerate(zip(ours, gold)) if not same_cell(a, b)]
            assert not bad, f"{file} row {i}: (column, nsysql, NVIDIA) {bad[:3]}"


@pytest.mark.parametrize("folder", WITHOUT_FILES, ids=case_id)
def test_nothing_where_nvidia_writes_nothing(folder, exports, cache):
    """NVIDIA's recipe wrote no output (its log says why, in command.txt): nsysql gives one line saying why."""
    name, paths, options = inputs_of(folder, exports)
    log = (folder / "command.txt").read_text(encoding="utf-8")
    with pytest.raises(NsysqlError) as err:
        nsysql.recipe(name, paths, cache_dir=cache, **options)
    said = str(err.value)
    assert "\n" not in said
    if "NCCL kernels" in log:
        assert "no NCCL kernels" in said
    elif "PMU" in log:
        assert "--cpu-core-events" in said and "PERF_EVENT_SOC_OR_CPU_RAW_EVENT" in said
    elif "projected onto the GPU" in log:
        assert "--cuda-graph-trace=node" in said
    elif "no NVTX ranges were found" in log:
        assert "--cpu-core-events" in said  # nvtx_cpu_topdown on a capture without NVTX: the PMU events lack too
    else:
        assert "no data was found" in log
        assert "within the filters" in said


def test_a_report_without_output_among_several_is_left_out(exports, cache):
    """NVIDIA's nvtx_gpu_proj_pace on eager + graphs ranks eager alone (graphs projects nothing): nsysql too, and says so."""
    if not {"gpt_decode_eager", "gpt_decode_graphs"} <= set(exports):
        pytest.skip("fixtures missing")
    skipped = []
    result = recipes.run("nvtx_gpu_proj_pace", [exports["gpt_decode_eager"], exports["gpt_decode_graphs"]],
                         ["eager", "graphs"], lambda p: nsysql.open(p, cache_dir=cache),
                         recipes.Options(name="decode_step"), on_skip=lambda n, why: skipped.append(n))
    assert result.files == ["gpt_decode_eager"] and skipped == ["graphs"]


# -- options as NVIDIA reads them -----------------------------------------------------------------------------
@pytest.mark.parametrize("text, parsed", [
    ("decode_step", ("decode_step", None, None)),
    ("decode_step/1", ("decode_step", None, 1)),
    ("step@mydomain", ("step", "mydomain", None)),
    ("step@*/3", ("step", "*", 3)),
    (r"a\/b/2", ("a/b", None, 2)),
    (r"x\@y@dom", ("x@y", "dom", None)),
])
def test_nvtx_filter_is_read_as_nvidia_reads_it(text, parsed):
    assert recipes.nvtx_filter(text) == parsed


@pytest.mark.parametrize("text", ["a/b/c", "a@b@c", "a/x"])
def test_a_bad_nvtx_filter_is_one_line(text):
    with pytest.raises(NsysqlError) as err:
        recipes.nvtx_filter(text)
    assert cli_text(err.value).startswith("--filter-nvtx") and "\n" not in str(err.value)  # as the CLI says it


def test_time_window():
    assert recipes.time_window(recipes.Options()) == (0, None)  # NVIDIA always drops what ends before the session
    assert recipes.time_window(recipes.Options(filter_time="5/9")) == (5, 9)
    assert recipes.time_window(recipes.Options(filter_time="/9")) == (None, 9)
    assert recipes.time_window(recipes.Options(start=7)) == (7, None)
    for bad in ("9/5", "/", "a/b", "5"):
        with pytest.raises(NsysqlError) as err:
            recipes.time_window(recipes.Options(filter_time=bad))
        assert cli_text(err.value).startswith("--filter-time"), bad


@pytest.mark.parametrize("name, options, says", [
    ("nvtx_pace", {}, "needs --name"),
    ("nvtx_pace", {"name": "s", "bins": 3}, "--bins is no option of nvtx_pace"),
    ("cuda_gpu_kern_hist", {"cumulative": True}, "--cumulative is no option"),
    ("nccl_gpu_time_util_map", {"cumulative": True}, "--cumulative is no option"),
    ("nvtx_pace", {"name": "s", "filter_projected_nvtx": "s"}, "--filter-projected-nvtx is no option"),
    ("nvtx_gpu_proj_pace", {"name": "s", "filter_nvtx": "a", "filter_projected_nvtx": "b"}, "exclude each other"),
    ("cuda_gpu_time_util_map", {"bins": 0}, "1 or more"),
])
def test_option_rules(name, options, says):
    with pytest.raises(NsysqlError) as err:
        recipes.check(recipes.recipe(name), recipes.Options(**options))
    assert says in cli_text(err.value)  # the command line's wording (the library writes `name=`)


def test_unknown_recipe_names_those_there_are():
    with pytest.raises(NsysqlError, match="nvtx_pace, nvtx_gpu_proj_pace"):
        recipes.recipe("nvtx_pac")


def test_pandas_index_rules():
    """pandas keeps a RangeIndex when NVIDIA's filters leave one block at either end of the rows, and pd.concat keeps
    one when each rank's continues the previous one (checked against NVIDIA's files above: hist-second of
    gpt-decode-eager has a column, of gpt-train-ckpt-accum a range)."""
    assert recipe_files._rank_index([0, 1, 2], 3) == (0, 3)
    assert recipe_files._rank_index([2, 3], 4) == (2, 4)
    assert recipe_files._rank_index([0, 1], 4) == (0, 2)
    assert recipe_files._rank_index([1, 2], 4) is None
    assert recipe_files._rank_index([0, 2], 3) is None
    assert recipe_files._concat_index([(0, 30), (0, 30)]) is None
    assert recipe_files._concat_index([(0, 30), (30, 40)]) == (0, 40)
    assert recipe_files._concat_index([(0, 30), None]) is None


# -- the command ----------------------------------------------------------------------------------------------
def cli(*args, env=None):
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "80", **(env or {})})


def test_command_table_fits_80_columns(exports, cache):
    if "gpt_decode_eager" not in exports:
        pytest.skip("fixture missing")
    for args in (["nvtx_pace", "--name", "decode_step"], ["cuda_gpu_kern_hist"], ["cuda_gpu_time_util_map"],
                 ["cuda_gpu_kern_pace", "--name", "indexSelectSmallIndex"], ["nvtx_gpu_proj_pace", "--name",
                                                                            "decode_step"]):
        res = cli("recipe", args[0], exports["gpt_decode_eager"], *args[1:], "--cache-dir", cache)
        assert res.exit_code == 0, res.output
        lines = res.stdout.splitlines()
        assert max(len(line) for line in lines) <= 80, args
        assert len(lines) > 4


def test_command_pace_table_leads_with_the_statistics(exports, cache):
    if "gpt_decode_eager" not in exports:
        pytest.skip("fixture missing")
    res = cli("recipe", "nvtx_pace", exports["gpt_decode_eager"], "--name", "decode_step", "--cache-dir", cache)
    lines = res.stdout.splitlines()
    assert lines[0] == "decode_step: 69 instances (nvtx_pace), duration"
    stats = pl.read_parquet(FIXTURES / "gpt-decode-eager" / "nsys-recipe" / "nvtx_pace" / "stats.parquet")
    median_ms = f"{stats['Median (approx)'][0] / 1e6:.3f}"
    assert median_ms in lines[4], lines[:5]  # NVIDIA's median, in ms
    assert "Instances" in res.stdout and "outlier" in res.stdout


def test_command_parquet_writes_nvidias_files(exports, cache, tmp_path):
    if "gpt_decode_eager" not in exports:
        pytest.skip("fixture missing")
    out = tmp_path / "dir"
    res = cli("recipe", "cuda_gpu_kern_pace", exports["gpt_decode_eager"], "--name", "indexSelectSmallIndex",
              "-f", "parquet", "-o", out, "--cache-dir", cache)
    assert res.exit_code == 0, res.output
    golden = FIXTURES / "gpt-decode-eager" / "nsys-recipe" / "cuda_gpu_kern_pace"
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in golden.glob("*.parquet"))
    assert pl.read_parquet(out / "pace_start.parquet").equals(pl.read_parquet(golden / "pace_start.parquet"))
    again = cli("recipe", "cuda_gpu_kern_pace", exports["gpt_decode_eager"], "--name", "indexSelectSmallIndex",
                "-f", "parquet", "-o", out, "--cache-dir", cache)
    assert again.exit_code == 1 and "--force" in again.output
    forced = cli("recipe", "cuda_gpu_kern_pace", exports["gpt_decode_eager"], "--name", "indexSelectSmallIndex",
                 "-f", "parquet", "-o", out, "--force", "--cache-dir", cache)
    assert forced.exit_code == 0, forced.output


def test_command_csv_is_the_recipe_rows_in_ns(exports, cache):
    if not {"gpt_decode_eager", "gpt_decode_graphs"} <= set(exports):
        pytest.skip("fixtures missing")
    res = cli("recipe", "nvtx_pace", exports["gpt_decode_eager"], exports["gpt_decode_graphs"], "--name",
              "decode_step", "-f", "csv", "--cache-dir", cache)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == ("export,rank,iteration,name,start_ns,end_ns,duration_ns,delta_ns,duration_accum_ns,"
                        "delta_accum_ns")
    gold = pl.read_parquet(MULTI / "gpt-decode-eager+graphs" / "nvtx_pace" / "pace_start.parquet")
    firsts = [line.split(",")[4] for line in lines[1:] if line.split(",")[2] == "0"]
    assert firsts == [str(int(gold["0"][0])), str(int(gold["1"][0]))]  # aligned as NVIDIA aligns them


@pytest.mark.parametrize("args, says", [
    (["nvtx_pacee"], "no recipe named 'nvtx_pacee'"),
    (["nvtx_pace"], "needs --name"),
    (["nvtx_pace", "--name", "no_such_range"], "has no NVTX range 'no_such_range'"),
    (["nccl_gpu_time_util_map"], "has no NCCL kernels"),
    (["nvtx_cpu_topdown"], "--cpu-core-events"),
    (["cuda_gpu_kern_hist", "-f", "parquet"], "-o DIR"),
])
def test_command_errors_are_one_line(exports, cache, args, says):
    if "gpt_decode_eager" not in exports:
        pytest.skip("fixture missing")
    res = cli("recipe", args[0], exports["gpt_decode_eager"], *args[1:], "--cache-dir", cache)
    assert res.exit_code == 1
    assert len(res.output.strip().splitlines()) == 1 and says in res.output, res.output


def test_pace_statistics_round_as_pandas_and_approximate_over_ranks():
    """stats.parquet's rule on numbers worked out by hand: per rank pandas' describe() rounded half to even (1..6:
    Q1 2.25 -> 2.2, Q3 4.75 -> 4.8, std 1.87 -> 1.9), then over ranks NVIDIA's approximations (mean = sum / count
    6.375 -> 6.4, std the ranks' mean, Q1 the smallest, median the median of medians 9.25 -> 9.2, Q3 the largest)."""
    durations = [(0, d) for d in (1, 2, 3, 4, 5, 6)] + [(1, 10), (1, 20)]
    frame = pl.DataFrame({"rank": [r for r, _ in durations], "iteration": [0] * len(durations),
                          "name": ["step"] * len(durations), "duration_ns": [float(d) for _, d in durations],
                          "delta_ns": [0.0] * len(durations)})
    from nsysql.sql import catalog
    one = recipes.reduce_sql(catalog.get("recipes._pace_stats"), pace_instance=frame.filter(pl.col("rank") == 0))
    assert one.row(0) == ("step", 6, 3.5, 1.9, 1.0, 2.2, 3.5, 4.8, 6.0, 21.0)
    both = recipes.reduce_sql(catalog.get("recipes._pace_stats"), pace_instance=frame)
    assert both.row(0) == ("step", 8, 6.4, 4.5, 1.0, 2.2, 9.2, 17.5, 20.0, 51.0)


# -- the pictures ---------------------------------------------------------------------------------------------
def picture_is_drawn(path: Path, min_size: tuple[int, int] = (800, 300)) -> None:
    """A PNG of at least `min_size` pixels with more than a blank page in it: many colours, a fair share inked."""
    from matplotlib import image
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = image.imread(path)
    assert pixels.shape[1] >= min_size[0] and pixels.shape[0] >= min_size[1], pixels.shape
    rgb = (pixels[..., :3] * 255).astype(int)
    colours = {tuple(p) for p in rgb[::7, ::7].reshape(-1, 3).tolist()}
    inked = float((rgb.sum(axis=2) < 600).mean())
    assert len(colours) > 50 and inked > 0.02, (len(colours), inked)


@pytest.mark.parametrize("kind, args", [
    ("pace", ["--name", "decode_step"]),
    ("pace", ["--recipe", "cuda_gpu_kern_pace", "--name", "indexSelectSmallIndex"]),
    ("hist", []),
    ("util-map", []),
    ("util-map", ["--bins", "12", "--cumulative"]),
])
def test_plot_draws_the_recipe_pictures(exports, cache, tmp_path, kind, args):
    if not {"gpt_decode_eager", "gpt_decode_graphs"} <= set(exports):
        pytest.skip("fixtures missing")
    out = tmp_path / f"{kind}.png"
    res = cli("plot", kind, exports["gpt_decode_eager"], exports["gpt_decode_graphs"], *args, "-o", out,
              "--cache-dir", cache)
    assert res.exit_code == 0, res.output
    assert f"wrote {out}" in res.output and [p.name for p in tmp_path.iterdir()] == [out.name]  # one for both
    picture_is_drawn(out)


def test_plot_nccl_heatmap_has_a_row_per_gpu(exports, cache, tmp_path):
    if "ddp2" not in exports:
        pytest.skip("the 2-GPU DDP export is not here (../shared/samples/ddp-2gpu)")
    out = tmp_path / "nccl.png"
    res = cli("plot", "util-map", exports["ddp2"], "--recipe", "nccl_gpu_time_util_map", "-o", out,
              "--cache-dir", cache)
    assert res.exit_code == 0, res.output
    picture_is_drawn(out, (1200, 900))  # the summary and four heatmaps (All, NCCL, Compute, Overlap)


@pytest.mark.parametrize("args, says", [
    (["pace"], "needs --name"),
    (["pace", "--recipe", "cuda_gpu_kern_hist", "--name", "x"], "draws nvtx_pace or"),
    (["hist", "--step", "1"], "--step applies to `plot timeline`"),
    (["util-map", "--top", "3"], "--top applies to"),
    (["kernels", "--name", "x"], "--name applies only to the recipe pictures"),
])
def test_plot_recipe_options_are_checked(exports, cache, tmp_path, args, says):
    if "gpt_decode_eager" not in exports:
        pytest.skip("fixture missing")
    res = cli("plot", args[0], exports["gpt_decode_eager"], *args[1:], "-o", tmp_path / "x.png", "--cache-dir", cache)
    assert res.exit_code == 1 and says in res.output, res.output
    assert not (tmp_path / "x.png").exists()


# -- the HTML report's charts -----------------------------------------------------------------------------------
def test_html_report_has_the_step_pace_and_the_heatmap(exports, cache):
    """`nsysql html`'s Step pace and GPU utilization sections hold NVIDIA's numbers: the step range's nvtx_pace
    (durations, deltas) and cuda_gpu_time_util_map's bins, compared with NVIDIA's files of the same report."""
    if "gpt_decode_eager" not in exports:
        pytest.skip("fixture missing")
    from nsysql.answers import html_report
    page = (Path(html_report.__file__).with_name("report_assets") / "report.html").read_text(encoding="utf-8")
    assert 'id="chart-pace"' in page and 'id="chart-utilmap"' in page
    with nsysql.open(exports["gpt_decode_eager"], cache_dir=cache) as ex:
        charts = html_report.recipe_charts([ex])
    golden = FIXTURES / "gpt-decode-eager" / "nsys-recipe"
    pace = charts["pace"]
    assert pace["name"] == "decode_step" and pace["ranks"] == ["gpt_decode_eager"]
    assert pace["rows"][0]["duration_ns"] == pl.read_parquet(golden / "nvtx_pace" / "pace_duration.parquet")["0"].to_list()
    assert pace["rows"][0]["delta_ns"] == pl.read_parquet(golden / "nvtx_pace" / "pace_delta.parquet")["0"].to_list()
    assert pace["rows"][0]["outlier"][0] == "long"  # the first decode step, three times the others
    util = charts["util"]
    kernel = pl.read_parquet(golden / "cuda_gpu_time_util_map" / "analysis.parquet")
    assert util["labels"] == [f"0/{d}/{p}" for d, p in kernel.select("Device ID", "PID").unique().rows()]
    assert util["z"] == [[None if v is None or math.isnan(v) else v for v in kernel["Kernel"].to_list()]]


# -- the cluster path: the recipe SQL on a Parquet dataset -------------------------------------------------------
def test_recipe_sql_runs_unchanged_on_duckdb_over_a_parquet_dataset(exports, cache, tmp_path):
    """`nsysql parquet` writes the normalized tables; each recipe's file runs on DuckDB views over them (one export
    selected, nsysql's macros created) with the same rows as on the export (docs/cluster-cookbook.md)."""
    if "gpt_decode_eager" not in exports:
        pytest.skip("fixture missing")
    from nsysql.sql import catalog, macros
    dataset = tmp_path / "ds"
    res = cli("parquet", exports["gpt_decode_eager"], "-o", dataset, "--name", "eager", "--cache-dir", cache)
    assert res.exit_code == 0, res.output
    con = duckdb.connect()
    for t in sorted(p.name for p in dataset.iterdir() if p.is_dir()):
        con.execute(f'CREATE VIEW "{t}" AS SELECT * EXCLUDE (export) FROM read_parquet('
                    f"'{dataset / t}/*/*.parquet', hive_partitioning = true) WHERE export = 'eager'")
    macros.install(con)
    runs = {"recipes.nvtx_pace": dict(name="decode_step", filter_name="decode_step", filter_index=1),
            "recipes.nvtx_gpu_proj_pace": dict(name="decode_step"),
            "recipes.cuda_gpu_kern_pace": dict(name="indexSelectSmallIndex"),
            "recipes.cuda_gpu_kern_hist": dict(filter_name="decode_step", filter_index=1),
            "recipes.cuda_gpu_time_util_map": dict(bin_size=351_038_754, max_duration=10_531_162_607)}
    with nsysql.open(exports["gpt_decode_eager"], cache_dir=cache) as ex:
        for qid, params in runs.items():
            q = catalog.get(qid)
            got = con.execute(q.sql, q.bound_params({**q.stated_defaults(), **params})).fetchall()
            want = ex.run(qid, **params).rows()
            assert got == want and len(got) > 0, qid
