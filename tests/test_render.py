"""The one renderer: human units for people (table, markdown), exact values for programs (csv, json), tables that
fit a width without ever folding a cell."""
from __future__ import annotations

import io
import re

import polars as pl
import pytest

from nsysql.present.render import (
    Meta,
    compact_kernel,
    fit,
    middle,
    number,
    people_columns,
    scaled,
    shorten_path,
    table_width,
    time_unit,
    to_csv,
    to_json,
    to_markdown,
    to_table,
    use_color,
)
from nsysql.sql import catalog

STEPS = pl.DataFrame({
    "step": [1, 2], "name": ["profiled_step", "profiled_step"], "source": ["range", "range"], "pid": [500, 500],
    "tid": [500, 500], "range_id": [489, 2381], "start_ns": [12_035_938_864, 12_066_728_198],
    "end_ns": [12_066_683_322, 12_100_960_016], "wall_ns": [30_744_458, 34_231_818], "gpu_ops": [375, 375],
    "kernels": [364, 364], "off_thread_ops": [232, 232], "gpu_busy_ns": [1_080_050, 1_082_705],
    "gpu_busy_pct": [3.5129, 3.1628], "fprop_ns": [309_894, 311_716], "bprop_ns": [619_882, 620_041],
    "optim_ns": [150_274, 150_948], "other_ns": [0, 0]})
ORIGIN = 386_470_580


def data_lines(text: str) -> list[str]:
    """The rows of a table: the lines after the rule under the header, up to the first footer line."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("─"))
    return lines[rule + 1:]


# -- numbers --------------------------------------------------------------------------------------------
def test_number_groups_thousands_and_rounds_half_up():
    assert number(55_690_571) == "55,690,571"
    assert number(1234.25, 1) == "1,234.3"  # half-up on the exact decimal, as csv's fixed()
    assert number(-0.0001, 3) == "0.000"
    assert scaled(300, 1e6, 3) == "<0.001"  # 300 ns in a ms column is not nothing
    assert scaled(-300, 1e6, 3) == ">-0.001"
    assert scaled(0, 1e6, 3) == "0.000"


@pytest.mark.parametrize("values,unit", [
    ([30_744_458, 34_231_818], "ms"),
    ([309_894, 150_274, 0], "ms"),           # from 0.1 ms
    ([9_000, 8_600, 11_464_600], "µs"),      # one outlier does not turn the rest into 0.009 ms
    ([500, 800], "ns"),
    ([20_000, 30_000, 6_001_943_759], "ms"),  # 6 s among 20 µs ones: 6,001.944 ms and 0.020 ms
    ([12_000_000_000, 40_000_000_000], "s"),
    ([0, 0], "ms"),
])
def test_time_unit_per_column(values, unit):
    assert time_unit(values)[0] == unit


@pytest.mark.parametrize("width", [24, 30, 40])
def test_paths_keep_the_component_that_tells_rows_apart(width):
    """A single middle ellipsis cuts layer_10 and layer_11 of the same sublayer to one text; component by
    component, the numbers stay and the last component stays whole."""
    rows = [f"forward_pass/layer_{n}/attention_sublayer/attn" for n in (10, 11)]
    assert middle(rows[0], width) == middle(rows[1], width)  # what this replaces
    shown = [shorten_path(r, width) for r in rows]
    assert all(len(x) <= width for x in shown) and shown[0] != shown[1]
    assert all(x.endswith("/attn") for x in shown)
    assert ["layer_10" in shown[0], "layer_11" in shown[1]] == [True, True]


def test_deep_paths_drop_whole_middle_components_before_cutting_the_last():
    """What a person reads in a 36-character layer column: the step, the layer and the innermost range, not
    every component cut to a few letters (`wa…up/layer_0/at…er/sca…on/ann…on/com…es`)."""
    deep = ("warmup/layer_0/attention_sublayer/scaled_dot_product_attention/annotated_scaled_dot_product_attention/"
            "computing softmax")
    assert shorten_path(deep, 36) == "warmup/layer_0/…/computing softmax"
    assert shorten_path(deep, 60) == "warmup/layer_0/attention_sublayer/…/computing softmax"  # only what must go
    assert shorten_path(deep.replace("layer_0", "layer_1"), 36) == "warmup/layer_1/…/computing softmax"
    cut = shorten_path(deep.replace("softmax", "attention scores"), 36)  # the last cut only when nothing is left
    assert len(cut) == 36 and cut.startswith("warmup/layer_0/…/computing") and cut.endswith("scores")


def test_paths_too_narrow_for_their_components_keep_the_number_and_the_last():
    # an annotated module's path repeats the layer's number (layer_0/model/layers.0): the repeat goes before a cut
    annotated = "forward_pass/layer_0/model/layers.0/attention_sublayer/attn/attention projections"
    assert shorten_path(annotated, 60) == "forward_pass/layer_0/…/layers.0/…/attn/attention projections"
    assert shorten_path(annotated, 58) == "forward_pass/layer_0/…/layers.0/…/attention projections"
    assert shorten_path(annotated, 44) == "forward_pass/layer_0/…/attention projections"
    assert "layers.1/" in shorten_path(annotated.replace("layers.0", "layers.1"), 44)  # not a repeat: kept
    narrow = shorten_path("forward_pass/layer_10/attention_sublayer/attn", 16)
    assert len(narrow) == 16 and "10/" in narrow and narrow.endswith("/attn")
    assert shorten_path("a/b", 10) == "a/b"
    assert shorten_path("a/b/c/d/e/f/g/h/i/j/k/l/m/n", 5) == middle("a/b/c/d/e/f/g/h/i/j/k/l/m/n", 5)


def test_middle_ellipsis_keeps_both_ends():
    assert middle("forward_pass/layer_0/attention_sublayer", 20) == "forward_pa…_sublayer"
    assert len(middle("x" * 300, 17)) == 17
    assert middle("short", 10) == "short"


def test_kernel_names_lose_templates_and_arguments():
    name = ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctor_add<float>, "
            "std::array<char *, (unsigned long)3>>(int, T2, T3)")
    assert compact_kernel(name) == "at::native::vectorized_elementwise_kernel<…>"
    assert compact_kernel("[CUDA memcpy Host-to-Device]") == "[CUDA memcpy Host-to-Device]"
    df = pl.DataFrame({"kernel": [name], "duration_ns": [1344]})
    text = to_table(df, width=50, columns=[Meta("duration_ns", "ns")])
    assert "vectorized_elementwise_kernel<…>" in data_lines(text)[0]


# -- units from the catalog headers ---------------------------------------------------------------------
def test_units_from_the_query_header():
    cols = {c.name: c for c in people_columns(STEPS, "analysis.steps", origin=ORIGIN)}
    assert (cols["wall_ns"].label, cols["wall_ns"].unit, cols["wall_ns"].cells) == ("wall", "ms", ["30.744", "34.232"])
    assert (cols["gpu_busy_pct"].label, cols["gpu_busy_pct"].unit, cols["gpu_busy_pct"].cells) == \
        ("gpu_busy", "%", ["3.5", "3.2"])
    # a timestamp is ms since the capture's first event, not a duration
    assert cols["start_ns"].kind == "timestamp" and cols["start_ns"].cells[0] == "11,649.468"
    assert cols["range_id"].cells == ["489", "2381"]  # ids plain
    assert cols["gpu_ops"].cells == ["375", "375"]


def test_every_ns_timestamp_column_is_marked_in_its_header():
    """Columns named like instants (start, end, first/last op, origin) say `ns timestamp`; durations say `ns`."""
    instants = re.compile(r"(^|_)(start|end|first_op|last_op|origin|from|to)_ns$")
    for q in catalog.group("analysis"):
        for c in q.columns:
            if c.name.endswith("_ns"):
                timestamp = c.unit.startswith("ns timestamp")
                assert timestamp == bool(instants.search(c.name)), (q.id, c)


def test_bytes_bandwidth_and_report_headers():
    df = pl.DataFrame({"total_bytes": [101_842_944, 172_032], "gb_per_s": [417.1624, 4.2331],
                       "Total Time (ns)": [24_410, 40_600], "Time (%)": [84.8, 14.1]})
    meta = [Meta("total_bytes", "bytes"), Meta("gb_per_s", "GB/s", 3), Meta("Total Time (ns)", "ns"),
            Meta("Time (%)", "pct", 1)]
    md = to_markdown(df, columns=meta)
    assert md.splitlines()[0] == "| total_bytes (MB) | gb_per_s (GB/s) | Total Time (µs) | Time (%) |"
    assert md.splitlines()[2] == "| 101.8 | 417.162 | 24.4 | 84.8 |"


def test_unit_groups_share_one_unit():
    df = pl.DataFrame({"fprop_ns": [60_100, 31_600, 3_186_800], "total_ns": [60_100, 14_139_000, 2_155_000]})
    alone = {c.name: c.unit for c in people_columns(df, [Meta("fprop_ns", "ns"), Meta("total_ns", "ns")])}
    shared = {c.name: c.unit for c in people_columns(df, [Meta("fprop_ns", "ns"), Meta("total_ns", "ns")],
                                                     unit_groups=[("fprop_ns", "total_ns")])}
    assert alone == {"fprop_ns": "µs", "total_ns": "ms"}
    assert len(set(shared.values())) == 1


def test_several_exports_each_from_its_own_origin():
    df = pl.DataFrame({"export": ["a", "b"], "rank": [None, None], "start_ns": [2_000_000, 7_000_000]},
                      schema_overrides={"rank": pl.Int64})
    cols = {c.name: c for c in people_columns(df, [Meta("start_ns", "ns timestamp")], origin={"a": 0, "b": 5_000_000})}
    assert cols["start_ns"].cells == ["2.000", "2.000"]


def test_machine_formats_stay_exact():
    assert to_csv(STEPS.select("start_ns", "wall_ns", "gpu_busy_pct"), {"gpu_busy_pct": 1}).splitlines()[1] == \
        "12035938864,30744458,3.5"
    assert '"wall_ns": 30744458' in to_json(STEPS, {})


def test_csv_is_what_the_csv_module_writes(monkeypatch):
    """The column-wise CSV writer against Python's csv module over the same cells (an independent writer):
    quoting of commas, quotes and newlines, nulls, booleans, floats with and without header decimals, lists,
    and more rows than one chunk."""
    import csv
    import io

    from nsysql.present import render
    monkeypatch.setattr(render, "CSV_CHUNK_ROWS", 2)
    df = pl.DataFrame({"id": [1, None, 3, 4, 5], "text": ['x,y', 'q"z', None, "line\nbreak", ""],
                       "flag": [True, None, False, True, None], "pct": [12.25, None, 0.05, float("nan"), 1e-5],
                       "ratio": [0.1, 2.0, None, 1 / 3, 1e20], "dims": [[1, 2], None, [], [3], [4, 5, 6]],
                       "names": [["a,b"], ["x"], None, [], ['"q"']]})
    decimals = {"pct": 1}
    expected = io.StringIO()
    writer = csv.writer(expected, lineterminator="\n")
    writer.writerow(df.columns)
    writer.writerows([[render.cell_text(v, decimals.get(c)) for c, v in zip(df.columns, row)] for row in df.iter_rows()])
    assert to_csv(df, decimals) == expected.getvalue()
    single = pl.DataFrame({"only": ["", "a"]})  # a lone empty field is quoted so the line is not blank
    assert to_csv(single, {}) == 'only\n""\na\n'


# -- fitting ---------------------------------------------------------------------------------------------
def test_no_number_is_ever_split():
    df = pl.DataFrame({"name": ["x" * 200], "cpu_ns": [55_690_571], "count": [12_345_678]})
    text = to_table(df, width=30, columns=[Meta("cpu_ns", "ns"), Meta("count", "count")])
    row = data_lines(text)[0]
    assert "55.691" in row and "12,345,678" in row
    assert len(data_lines(text)) == 1
    assert all(len(line) <= 30 for line in text.splitlines())


def test_optional_columns_hidden_in_order_with_one_line_saying_so():
    text = to_table(STEPS, width=80, columns="analysis.steps", origin=ORIGIN,
                    optional=("range_id", "source", "pid", "tid", "end_ns", "gpu_ops", "off_thread_ops", "other_ns",
                              "kernels", "start_ns"))
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert len(data_lines(text)) == 2 + 2  # two rows, the time note, the hidden-columns line
    assert re.fullmatch(r"\d+ columns hidden to fit 80 columns.*; --wide shows them", lines[-1])
    header = "\n".join(lines[:4])
    assert "range_id" not in header and "wall" in header and "fprop" in header
    wide = to_table(STEPS, width=80, columns="analysis.steps", origin=ORIGIN, optional=("range_id",), wide=True)
    assert "range_id" in wide and "hidden" not in wide and max(map(len, wide.splitlines())) > 80


def test_hidden_together_and_never_below_one_column():
    df = pl.DataFrame({"name": ["a"], "a_count": [1], "b_count": [2], "delta_ns": [3]})
    shown, _, hidden = fit(people_columns(df), 12, [("a_count", "b_count")])
    assert hidden == ["a_count", "b_count"] and [c.name for c in shown] == ["name", "delta_ns"]
    shown, _, hidden = fit(people_columns(df), 1, ["name", "a_count", "b_count", "delta_ns"])
    assert len(shown) == 1


def test_long_text_is_shortened_to_fit():
    df = pl.DataFrame({"range_path": ["forward_pass/layer_0/attention_sublayer/computing attention scores"],
                       "launches": [828]})
    text = to_table(df, width=40)
    row = data_lines(text)[0]
    assert len(row) <= 40 and "…" in row and "/layer_0/" in row and row.rstrip().endswith("828")


def test_first_rows_and_how_many_more():
    df = pl.DataFrame({"idx": list(range(1, 101)), "duration_ns": [1000] * 100})
    text = to_table(df, width=80, max_rows=40, columns=[Meta("idx", "position"), Meta("duration_ns", "ns")])
    rows = data_lines(text)
    assert rows[39].split()[0] == "40" and rows[40].startswith("60 more rows; -f csv")


def test_brackets_are_text_and_colour_only_when_asked():
    df = pl.DataFrame({"kernel": ["[CUDA memcpy Host-to-Device]", "[gemm]"]})
    assert "\x1b" not in to_table(df, width=100)
    assert "\x1b[1m" in to_table(df, width=100, color=True)
    assert "[CUDA memcpy Host-to-Device]" in to_table(df, width=100, color=True)


def test_empty_frame():
    text = to_table(pl.DataFrame({"a": pl.Series([], dtype=pl.Int64)}), width=80)
    assert "(no rows)" in text


# -- width rule -------------------------------------------------------------------------------------------
class _Tty(io.StringIO):
    def isatty(self):
        return True

    def fileno(self):
        raise OSError("not a real terminal")


class _TtyAt2(_Tty):
    def fileno(self):
        return 2


def test_width_rule(monkeypatch):
    pipe = io.StringIO()
    monkeypatch.delenv("COLUMNS", raising=False)
    assert table_width(None, pipe, io.StringIO()) == 100  # neither stdout nor stderr a terminal: 100
    monkeypatch.setattr("nsysql.present.render.os.get_terminal_size", lambda fd: __import__("os").terminal_size((72, 40)))
    assert table_width(None, pipe, _TtyAt2()) == 72  # piped into less from a terminal: the terminal's width
    assert table_width("out.txt", pipe, _TtyAt2()) == 100  # -o FILE: not fitted to the terminal
    monkeypatch.undo()
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setenv("COLUMNS", "80")
    assert table_width(None, pipe, _TtyAt2()) == 80  # $COLUMNS, when set, wins over the terminal behind stderr
    assert table_width(None, pipe) == 80
    assert table_width("out.txt", _Tty()) == 80  # a file is not a terminal
    monkeypatch.setattr("shutil.get_terminal_size", lambda fallback=None: __import__("os").terminal_size((132, 40)))
    assert table_width(None, _Tty()) == 132  # a terminal: its own width
    assert use_color(None, _Tty()) and not use_color(None, pipe) and not use_color("out.txt", _Tty())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(None, _Tty())


def test_export_labels_keep_the_word_that_tells_them_apart():
    """Per-rank exports with long names share all but their last characters: a narrow table keeps the whole word
    that differs (`…rank0`), not just the differing characters (`…0`)."""
    from nsysql.present.render import to_table
    df = pl.DataFrame({"export": ["ddp-gpt-small-2gpu-job-rank0", "ddp-gpt-small-2gpu-job-rank1"],
                       "note": ["x" * 60, "y" * 60]})
    text = to_table(df, width=40, columns={})
    assert "…rank0" in text and "…rank1" in text, text
    assert max(len(line) for line in text.splitlines()) <= 40


def test_notes_wrap_at_the_terminal_and_keep_numbers_with_their_units(monkeypatch):
    """A stderr note (the job's alignment line) wraps at the terminal's width, later lines indented, and never
    parts a number from its unit."""
    from nsysql.present.render import wrap_note
    monkeypatch.setenv("COLUMNS", "40")
    text = wrap_note("note: 2 exports of one job, put on rank0's clock (rank1 -37.41 ms; ends 984 ns apart)")
    lines = text.splitlines()
    assert len(lines) > 1 and all(len(line) <= 40 for line in lines) and lines[1].startswith("  ")
    assert "-37.41 ms" in text and "984 ns" in text  # each on one line
    assert " ".join(line.strip() for line in lines) == ("note: 2 exports of one job, put on rank0's clock (rank1 "
                                                        "-37.41 ms; ends 984 ns apart)")
