"""How well backward inference (gpu_op_attribution rule 7, link `inferred`) charges backward kernels to their
forward layer, against the ground truth of the same capture.

    python bench/bench_backward_inference.py [EXPORT ...] [--show]

Each export is a capture made with `--op-ranges-last` (fixtures/bwdtruth-*: plain forward ranges in the first
profiled steps, PyTorch's op markers in the last one; each step in a `profiled_step` range; the warm-up steps,
whose ranges lack `forward_pass`, are left out). In the last step every backward kernel reaches its
forward op, hence its layer, through the autograd seq link; the plain steps run the same kernels in the same
order, so the kernel at position i of a plain step's backward pass is the one at position i of the marked
step's. The script checks that the sequences are the same (name, grid, block of every op), then sums over the
plain steps' backward passes, kernels only (copies and sets are no kernel time):

- assigned: kernel time whose row nsysql marks `inferred`;
- correct: inferred to the true layer or to a range enclosing it (`forward_pass/layer_3` for a kernel of
  `forward_pass/layer_3/ffn_sublayer`); exact: to the true layer itself;
- wrong: inferred to any other range;
- no truth: kernels of the marked step without a seq link (PyTorch's AccumulateGrad and the like): not
  counted as correct or wrong.

The goal of issue 16: correct >= 90 % and wrong <= 1 % of the plain steps' backward kernel time.
Default exports: every fixtures/bwdtruth-*/export.sqlite.xz.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

OPS_SQL = """
SELECT o.op_kind, o.op_id, (o.call_global_tid >> 24) & 16777215 AS pid, o.call_start_ns,
       CAST(a.direction AS VARCHAR) AS direction, CAST(a.link AS VARCHAR) AS link, u.layer,
       hash(o.kernel_name, o.label, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z) AS sig,
       o.end_ns - o.start_ns AS duration_ns, COALESCE(CAST(o.kernel_name AS VARCHAR), o.label) AS name
FROM gpu_op_int AS o
JOIN gpu_op_attribution AS a USING (op_kind, op_id)
LEFT JOIN user_range AS u ON u.range_id = a.layer_range_id
LEFT JOIN kernel_int AS k ON k.kernel_id = CASE WHEN o.op_kind = 'kernel' THEN o.op_id END
WHERE o.call_start_ns IS NOT NULL
ORDER BY pid, o.call_start_ns, o.op_kind, o.op_id
"""
STEPS_SQL = "SELECT start_ns, end_ns FROM user_range WHERE is_step ORDER BY start_ns"


def backward_passes(rows: list[dict]) -> list[list[dict]]:
    """Runs of backward ops launched off their own ranges (the autograd thread's), between forward ops."""
    passes: list[list[dict]] = []
    current: list[dict] = []
    last_pid = None
    for r in rows:
        if r["pid"] != last_pid and current:
            passes.append(current)
            current = []
        last_pid = r["pid"]
        if r["direction"] == "bprop" and r["link"] != "own":
            current.append(r)
        elif r["direction"] == "fprop" and r["link"] == "own" and current:
            passes.append(current)
            current = []
    if current:
        passes.append(current)
    return passes


def on_path(inferred: str, truth: str) -> bool:
    return truth == inferred or truth.startswith(inferred + "/")


def measure(path: Path, show: bool = False) -> dict:
    import nsysql

    with nsysql.open(path, use_cache=False) as ex:
        rows = ex.sql(OPS_SQL).to_dicts()
        steps = ex.sql(STEPS_SQL).rows()
    in_step = [p for p in backward_passes(rows)
               if any(s <= p[0]["call_start_ns"] <= e for s, e in steps)]
    passes = in_step
    marked = [p for p in passes if any(r["link"] == "seq" for r in p)]
    if len(marked) != 1:
        raise SystemExit(f"{path}: {len(marked)} backward passes with op markers; expected one (--op-ranges-last)")
    truth = marked[0]
    truth_sig = [r["sig"] for r in truth]
    plain = [p for p in passes if p is not truth and any(r["link"] in ("inferred", "borrowed") for r in p)]
    same = [p for p in plain if [r["sig"] for r in p] == truth_sig]
    out = dict(export=path.parent.name if path.name.startswith("export.") else path.name, passes=len(plain),
               compared=len(same), kernel_ns=0, assigned_ns=0, correct_ns=0, exact_ns=0, wrong_ns=0, no_truth_ns=0)
    for p in same:
        for i, (r, t) in enumerate(zip(p, truth)):
            r["pos"] = i
            if r["op_kind"] != "kernel":
                continue
            d = r["duration_ns"]
            out["kernel_ns"] += d
            known = t["layer"] if t["link"] == "seq" else None
            if known is None:
                out["no_truth_ns"] += d
            if r["link"] != "inferred":
                if show and p is same[0]:
                    print(f"  not assigned: {r['pos']:5d} {100 * d / sum(x['duration_ns'] for x in p):5.2f} %  "
                          f"truth {known}  {r['name'][:70]}", file=sys.stderr)
                continue
            out["assigned_ns"] += d
            if known is None:
                continue
            if on_path(r["layer"], known):
                out["correct_ns"] += d
                out["exact_ns"] += d if r["layer"] == known else 0
            else:
                out["wrong_ns"] += d
                if show:
                    print(f"  WRONG {r['pos']:5d} {r['layer']} (truth {known})  {r['name'][:70]}", file=sys.stderr)
    return out


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exports", nargs="*", type=Path)
    parser.add_argument("--show", action="store_true",
                        help="list the first compared pass's kernels left unassigned, and every wrong one (stderr)")
    args = parser.parse_args(argv)
    exports = args.exports or sorted((REPO / "fixtures").glob("bwdtruth-*/export.sqlite.xz"))
    head = ("| export | plain passes (same kernels as the marked one) | backward kernel time | assigned | correct "
            "| of which exact | wrong | no truth |")
    print(head)
    print("|" + "---|" * 8)
    for path in exports:
        m = measure(path, args.show)
        k = m["kernel_ns"]
        print(f"| `{m['export']}` | {m['passes']} ({m['compared']}) | {k / 1e6:,.3f} ms | {pct(m['assigned_ns'], k)} "
              f"| {pct(m['correct_ns'], k)} | {pct(m['exact_ns'], k)} | {pct(m['wrong_ns'], k)} "
              f"| {pct(m['no_truth_ns'], k)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
