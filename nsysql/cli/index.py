"""`nsysql --help`'s list of commands: one line each, grouped by what a user wants (as `git --help` and
sqlite-utils group theirs). A command not listed here (an analysis declared outside nsysql) is shown under
"More" with the first sentence of its help, cut to the line."""
from __future__ import annotations

# (heading, [(command, one line)]) in the order shown; each line fits 80 columns beside the longest name
GROUPS: list[tuple[str, list[tuple[str, str]]]] = [
    ("Start here", [
        ("summarize", "Where the time went: steps, GPU use, top ops, findings"),
        ("overview", "The steady-state steps at a glance"),
        ("findings", "Problems found, largest recoverable time first"),
    ]),
    ("What bounds the step", [
        ("critical-path", "The chain of CPU, GPU and rank work that sets each step"),
        ("what-if", "Predicted step time with some durations scaled"),
    ]),
    ("Where GPU time went", [
        ("steps", "Steps (iterations): wall time, GPU busy time, split"),
        ("requests", "Inference requests: TTFT, time per output token"),
        ("kernels", "Every kernel with its direction, layer and op"),
        ("layers", "Kernel time per layer: forward, backward, optimizer"),
        ("efficiency", "Achieved TFLOP/s and GB/s, tensor-core share"),
        ("overhead", "Kernel launch overhead: API, queue and kernel time"),
        ("memcpy", "Memory copies and sets: bytes, GB/s, pageable, sync"),
        ("gaps", "GPU idle gaps, and what the CPU did meanwhile"),
        ("utilization", "GPU utilization per device and time window"),
    ]),
    ("Several GPUs and ranks", [
        ("comm", "Communication against compute per rank and step"),
        ("collectives", "Collectives per operation over every rank"),
    ]),
    ("Compare, draw and share", [
        ("diff", "Compare two exports; with --fail-above, a gate for CI"),
        ("mcp", "Serve the answers to a coding agent (MCP, stdio)"),
        ("plot", "A timeline, layer bars or top kernels as an image"),
        ("html", "Summarize's answer as one self-contained HTML page"),
        ("perfetto", "The analysed steps as a trace for the Perfetto UI"),
    ]),
    ("NVIDIA's reports and rules, identical to nsys", [
        ("reports", "List the reports (nsys stats -r NAME)"),
        ("report", "Run one report"),
        ("rules", "List the expert rules (nsys analyze -r NAME)"),
        ("analyze", "Run one expert rule"),
        ("recipe", "NVIDIA's pacing, histogram and heatmap recipes"),
    ]),
    ("Your own queries", [
        ("sql", "Run read-only SQL on an export's tables and views"),
        ("db", "Write a DuckDB database of the tables and views"),
        ("parquet", "Write the tables as a Parquet dataset"),
    ]),
    ("Capture and cache", [
        ("capture", "Profile a seed model and export OUT.sqlite"),
        ("cache", "Show or empty the cache of normalized exports"),
    ]),
]


def one_line(text: str, width: int) -> str:
    """`text` on one line of at most `width` characters (cut at a word, with `…`)."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[:max(width - 1, 1)].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def sections(commands: dict[str, str], width: int) -> list[tuple[str, list[tuple[str, str]]]]:
    """(heading, [(command, line)]) of the commands present, `commands` mapping each name to its first sentence
    (used for those not in GROUPS); `width`: the terminal's, for those lines."""
    listed = {name for _, rows in GROUPS for name, _ in rows}
    out = [(heading, [(n, line) for n, line in rows if n in commands]) for heading, rows in GROUPS]
    rest = [n for n in commands if n not in listed]
    if rest:
        name_width = max(map(len, commands))
        out.append(("More", [(n, one_line(commands[n], width - name_width - 4)) for n in rest]))
    return [(heading, rows) for heading, rows in out if rows]
