"""`nsysql plot`: the data each picture draws (against the raw rows) and the files written."""
from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest
from typer.testing import CliRunner

import nsysql
from nsysql.cli.app import app
from nsysql.present import plot

from conftest import plain_attribution
from plainwalk import top_level_user_ranges
from test_diff import raw_kernels
from test_steps import open_case

runner = CliRunner()
FP32 = "gpt-tiny-train-fp32"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def fp32(opened, export_files):
    return opened[FP32], export_files[FP32]


# -- data ------------------------------------------------------------------------------------------
def test_timeline_window_rows_match_raw(fp32):
    ex, path = fp32
    pa = plain_attribution(path)
    step = ex.steps().row(0, named=True)
    lo, hi = step["start_ns"], step["end_ns"]
    ranges = ex.run("analysis._plot_timeline_ranges", from_ns=lo, to_ns=hi, op_markers=False)
    expected = {r["id"] for r in pa.ranges if r["user"] and r["end"] >= lo and r["start"] <= hi}
    assert set(ranges["range_id"]) == expected
    with_markers = ex.run("analysis._plot_timeline_ranges", from_ns=lo, to_ns=hi, op_markers=True)
    assert set(with_markers["range_id"]) == {r["id"] for r in pa.ranges if r["end"] >= lo and r["start"] <= hi}
    # without markers the level counts user ranges only: profiled_step 0, forward_pass 1, layer_0 2
    level = dict(zip(ranges["text"], ranges["level"]))
    assert (level["profiled_step"], level["forward_pass"], level["layer_0"]) == (0, 1, 2)
    ops = ex.run("analysis._plot_timeline_ops", from_ns=lo, to_ns=hi)
    assert ops.height == sum(1 for o in pa.ops if o[3] >= lo and o[2] <= hi)
    direction = {(kind, rowid): d for kind, rowid, d, *_ in pa.attribute()}
    got = Counter(ops["direction"])
    assert got == Counter(direction[(o[0], o[1])] for o in pa.ops if o[3] >= lo and o[2] <= hi)


def test_window_from_milliseconds(fp32):
    ex, _ = fp32
    whole = ex.run("analysis._plot_window", start_ms=None, end_ms=None).row(0, named=True)
    part = ex.run("analysis._plot_window", start_ms=1.5, end_ms=2.25).row(0, named=True)
    assert part["origin_ns"] == whole["origin_ns"] == whole["from_ns"]
    assert (part["from_ns"] - part["origin_ns"], part["to_ns"] - part["origin_ns"]) == (1_500_000, 2_250_000)
    assert whole["to_ns"] > whole["from_ns"]


def test_top_kernels_match_raw(fp32):
    ex, path = fp32
    ns, count = Counter(), Counter()
    for full, _, d in raw_kernels(path):
        ns[full] += d
        count[full] += 1
    df = ex.run("analysis._plot_kernels", top=5)
    top = sorted(ns.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    assert list(zip(df["kernel_name"], df["total_ns"])) == top
    assert df["instances"].to_list() == [count[k] for k, _ in top]
    assert df["pct"][0] == pytest.approx(100 * top[0][1] / sum(ns.values()))


def test_labels_are_distinct(fp32):
    ex, _ = fp32
    labels = plot._kernel_labels(ex.run("analysis._plot_kernels", top=40))
    assert len(set(labels)) == len(labels)
    assert all(len(label) < 130 for label in labels)
    paths = ["forward_pass/layer_0/attention_sublayer/scaled_dot_product_attention/annotated/computing softmax",
             "forward_pass/layer_1/attention_sublayer/scaled_dot_product_attention/annotated/computing softmax",
             "optimizer_step"]
    short = plot._unique_short_paths(paths)
    assert len(set(short)) == 3 and short[2] == "optimizer_step" and "…" in short[0] and "layer_0" in short[0]


# -- files -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind,suffix,args", [
    ("timeline", ".png", ["--step", "1"]),
    ("timeline", ".svg", ["--start-ms", "0"]),
    ("timeline", ".png", ["--step", "1", "--op-markers"]),
    ("layers", ".png", ["--top", "10"]),
    ("layers", ".svg", ["--merge-repeats", "--depth", "2"]),
    ("kernels", ".png", ["--top", "12"]),
])
def test_cli_writes_images(fp32, cache_dir, tmp_path, kind, suffix, args):
    _, path = fp32
    out = tmp_path / f"{kind}{suffix}"
    res = runner.invoke(app, ["plot", kind, str(path), "-o", str(out), "--cache-dir", str(cache_dir), *args])
    assert res.exit_code == 0, res.output
    data = out.read_bytes()
    assert data.startswith(PNG) if suffix == ".png" else b"<svg" in data[:2000]
    assert len(data) > 10_000


@pytest.mark.parametrize("args,message", [
    (["timeline", "-o", "x.txt"], "must end in"),
    (["timeline", "-o", "x.png", "--step", "9"], "has steps 1 to 1"),
    (["timeline", "-o", "x.png", "--start-ms", "5", "--end-ms", "5"], "empty time window"),
    (["timeline", "-o", "x.png", "--step", "1", "--start-ms", "0"], "not both"),
    (["kernels", "-o", "x.png", "--step", "1"], "only to `plot timeline`"),
    (["timeline", "-o", "x.png", "--top", "3"], "--top applies"),
    (["timeline", "-o", "x.png", "--pid", "3"], "give both"),
    (["layers", "-o", "x.png", "--pid", "3"], "only to `plot timeline`"),
])
def test_cli_errors(fp32, cache_dir, tmp_path, args, message):
    _, path = fp32
    kind, rest = args[0], args[1:]
    rest = [str(tmp_path / a) if a.startswith("x.") else a for a in rest]
    res = runner.invoke(app, ["plot", kind, str(path), "--cache-dir", str(cache_dir), *rest])
    assert res.exit_code == 1
    assert message in res.output and "Traceback" not in res.output


def test_window_with_nothing(tmp_path):
    ex, _ = open_case(tmp_path, "steps_named")
    with pytest.raises(nsysql.NsysqlError, match="nothing happens"):
        plot.timeline(ex, tmp_path / "t.png", start_ms=100_000, end_ms=100_001)
    plot.timeline(ex, tmp_path / "t.png", step=3)  # a small export draws too
    assert (tmp_path / "t.png").read_bytes().startswith(PNG)
    ex.close()


def test_step_of_one_of_several_processes(tmp_path):
    """Each process numbers its own steps: `--step 1` of a two-rank export names two steps, `--pid` picks one."""
    ex, path = open_case(tmp_path, "two_ranks")
    with pytest.raises(nsysql.NsysqlError, match=r"processes 100, 200 each have a step 1 .*choose one with `pid=`"):
        plot.timeline(ex, tmp_path / "t.png", step=1)
    with pytest.raises(nsysql.NsysqlError, match="has steps in process 100, 200"):
        plot.timeline(ex, tmp_path / "t.png", step=1, pid=300)
    with pytest.raises(nsysql.NsysqlError, match="has steps 1 to 3 in process 200"):
        plot.timeline(ex, tmp_path / "t.png", step=4, pid=200)
    plot.timeline(ex, tmp_path / "t.png", step=3, pid=200)
    assert (tmp_path / "t.png").read_bytes().startswith(PNG)
    ex.close()
    res = runner.invoke(app, ["plot", "timeline", str(path), "-o", str(tmp_path / "c.png"), "--step", "1",
                              "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 1 and "choose one with --pid" in res.output, res.output


def test_no_pyplot_and_no_display(fp32, cache_dir, tmp_path):
    _, path = fp32
    code = (
        "import sys, nsysql\nfrom nsysql.present import plot\n"
        f"ex = nsysql.open({str(path)!r}, cache_dir={str(cache_dir)!r})\n"
        f"plot.kernels(ex, {str(tmp_path / 'k.png')!r})\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'\n"
    )
    env = {"PATH": "/usr/bin:/bin", "MPLBACKEND": "TkAgg", "HOME": str(tmp_path)}  # no DISPLAY; a GUI backend asked
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)
    assert (tmp_path / "k.png").read_bytes().startswith(PNG)


def test_steps_window_is_top_level_step(fp32):
    ex, path = fp32
    step = ex.steps().row(0, named=True)
    top = [r for r in top_level_user_ranges(plain_attribution(path)) if r["text"] == "profiled_step"]
    assert (step["start_ns"], step["end_ns"]) == (top[0]["start"], top[0]["end"])


# -- the critical path over the timeline (--critical-path) -------------------------------------------
CP_CASES = [("cnn-pinned-train", 6, None), ("cnn-dataloader-train", 2, None), ("ddp-2gpu-torchrun", 1, 853)]


def drawn_spans(fig, prefix: str) -> dict[tuple[int, str, float], list[tuple[float, float]]]:
    """(axis index, kind, row centre) -> [(start, end)] ms of every bar the figure drew under the gid `prefix<kind>`."""
    out: dict = {}
    for i, ax in enumerate(fig.axes):
        for coll in ax.collections:
            gid = coll.get_gid() or ""
            if not gid.startswith(prefix) or gid[len(prefix):].startswith("track-"):
                continue
            for p in coll.get_paths():
                xs, ys = p.vertices[:, 0], p.vertices[:, 1]
                key = (i, gid[len(prefix):], round(float(ys.min() + ys.max()) / 2, 3))
                out.setdefault(key, []).append((float(xs.min()), float(xs.max())))
    return out


def merged(spans) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in sorted(spans):
        if out and a - out[-1][1] < 1e-6:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(round(a, 6), round(b, 6)) for a, b in out]


def draw_with_path(ex, tmp_path, monkeypatch, **kw):
    figs = []
    monkeypatch.setattr(plot, "_save", lambda fig, output: figs.append(fig) or output)
    plot.timeline(ex, tmp_path / "t.png", critical_path=True, **kw)
    return figs[0]


@pytest.mark.parametrize("name,step,pid", CP_CASES)
def test_critical_path_row_is_the_path(opened, tmp_path, monkeypatch, name, step, pid):
    """The path row draws each item of `critical-path --items` (item_rows) from its start to its end, in its
    kind's colour, and the legend says each kind's time as the composition frame has it."""
    from nsysql.answers import critical_path as cp
    from nsysql.core.units import duration
    from nsysql.present.plot_path import KIND_COLORS, KIND_LABELS, KINDS
    ex = opened[name]
    fig = draw_with_path(ex, tmp_path, monkeypatch, step=step, pid=pid)
    items = cp.item_rows(ex, step, pid)
    origin = ex.time_origin()
    expected: dict[str, list] = {}
    for kind, s, e in items.select("kind", "start_ns", "end_ns").iter_rows():
        expected.setdefault(kind, []).append(((s - origin) / 1e6, (e - origin) / 1e6))
    got = drawn_spans(fig, "critical-path-")
    assert {k for _, k, _ in got} == set(expected)
    for kind, spans in expected.items():
        mine = [s for (ax, k, _), v in got.items() if k == kind for s in v]
        assert len(mine) == len(spans), kind
        flat = [x for span in sorted(mine) for x in span]
        assert flat == pytest.approx([x for span in sorted(spans) for x in span], abs=1e-6), kind
    for coll in fig.axes[0].collections:
        kind = coll.get_gid()[len("critical-path-"):]
        assert tuple(coll.get_facecolor()[0][:3]) == pytest.approx(
            tuple(int(KIND_COLORS[kind][i:i + 2], 16) / 255 for i in (1, 3, 5)))
    comp = cp.composition(ex, step, pid).row(0, named=True)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert len(legend) == len(KINDS) == 7
    for kind, text in zip(KINDS, legend):
        ns = comp[f"{kind}_ns"]
        assert text.startswith(KIND_LABELS[kind] + ": ")
        assert (duration(ns) in text) if ns else text.endswith("none"), text


def test_critical_path_marks_its_tracks(opened, export_files, tmp_path, monkeypatch):
    """On the DDP export, step 1 of rank 853 runs through rank 854's threads: each item marked on a thread or stream
    row is on a track the raw rows put it on (a CUDA call or OS wait of that thread around it, an op of that
    stream), and the strips on the stream rows cover exactly the path's items of that stream."""
    import sqlite3

    from nsysql.answers import critical_path as cp
    name = "ddp-2gpu-torchrun"
    ex = opened[name]
    items = cp.item_tracks(ex, 1, 853)
    assert set(items["on_pid"]) == {853, 854}  # the path crosses ranks
    db = sqlite3.connect(export_files[name])
    calls = {}  # (pid, tid) -> [(start, end)] of CUDA calls and OS-runtime calls
    for table in ("CUPTI_ACTIVITY_KIND_RUNTIME", "OSRT_API"):
        for s, e, g in db.execute(f"SELECT start, end, globalTid FROM {table}"):
            calls.setdefault(((g >> 24) & 0xFFFFFF, g & 0xFFFFFF), []).append((s, e))
    ops = {}
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        for s, e, d, st in db.execute(f"SELECT start, end, deviceId, streamId FROM {table}"):
            ops.setdefault((d, st), []).append((s, e))
    for r in items.iter_rows(named=True):
        if r["tid"] is not None:
            mine = calls.get((r["on_pid"], r["tid"]), [])
            if r["kind"] == "launch":  # in the call, or the latency after it
                assert any(s <= r["start_ns"] <= e for s, e in mine), r
            elif r["kind"] == "sync_wait":  # the end of the waiting call
                assert any(s <= r["start_ns"] and e == r["end_ns"] for s, e in mine), r
            else:
                assert r["kind"] == "cpu", r
        elif r["device_id"] is not None:
            assert any(s <= r["end_ns"] <= e for s, e in ops[(r["device_id"], r["stream_id"])]), r
    fig = draw_with_path(ex, tmp_path, monkeypatch, step=1, pid=853)
    ax_gpu = fig.axes[2]
    labels = [t.get_text() for t in ax_gpu.get_yticklabels()]
    origin = ex.time_origin()
    got: dict = {}
    for coll in ax_gpu.collections:
        if (coll.get_gid() or "").startswith("critical-path-track-"):
            for p in coll.get_paths():
                xs, ys = p.vertices[:, 0], p.vertices[:, 1]
                got.setdefault(labels[round(float(ys.min()))], []).append((float(xs.min()), float(xs.max())))
    expected: dict = {}
    for r in items.filter(items["device_id"].is_not_null()).iter_rows(named=True):
        expected.setdefault(f"GPU {r['device_id']}\nstream {r['stream_id']}", []).append(
            ((r["start_ns"] - origin) / 1e6, (r["end_ns"] - origin) / 1e6))
    assert expected and {k: merged(v) for k, v in got.items()} == {k: merged(v) for k, v in expected.items()}
    threads = sum(c.get_paths().__len__() for c in fig.axes[1].collections
                  if (c.get_gid() or "").startswith("critical-path-track-"))
    assert threads > 0


def test_cli_critical_path_svg(fp32, cache_dir, tmp_path):
    """`--critical-path` adds the path's bars (their ids in the SVG); without it there are none."""
    _, path = fp32
    for flag, present in ((["--critical-path"], True), ([], False)):
        out = tmp_path / f"t{len(flag)}.svg"
        res = runner.invoke(app, ["plot", "timeline", str(path), "-o", str(out), "--step", "1",
                                  "--cache-dir", str(cache_dir), *flag])
        assert res.exit_code == 0, res.output
        svg = out.read_text(encoding="utf-8")
        assert ('id="critical-path-' in svg) == present
        assert ('id="critical-path-track-' in svg) == present
    res = runner.invoke(app, ["plot", "layers", str(path), "-o", str(tmp_path / "l.png"), "--critical-path",
                              "--cache-dir", str(cache_dir)])
    assert res.exit_code == 1 and "--critical-path applies only to `plot timeline`" in res.output
