"""Attribution coverage: how much kernel time has a known layer, summed over exports and said in one line
(`nsysql layers` and `nsysql summarize` end with it; `Export.attribution_coverage()` gives one export's figures)."""
from __future__ import annotations


def combined(covs: list[dict]) -> dict:
    """Coverage over several exports: sums of the ns columns, percentage recomputed."""
    total = {k: sum(c[k] for c in covs) for k in covs[0] if k != "known_layer_pct"}
    total["known_layer_pct"] = 100.0 * total["known_layer_ns"] / total["kernel_ns"] if total["kernel_ns"] else None
    return total


def coverage_line(cov: dict) -> str:
    if not cov["kernel_ns"]:
        return "coverage: the export has no kernels"
    from nsysql.present.render import fixed

    def ms(key: str) -> str:
        return f"{cov[key] / 1e6:,.3f} ms"
    annotated = (f"{ms('by_annotated_ns')} from nsysql.annotate's backward ranges, "
                 if cov.get("by_annotated_ns") else "")  # said only where there are some
    inferred = (f"{ms('by_inferred_ns')} of backward inferred from the repeated layers, "
                if cov.get("by_inferred_ns") else "")
    rerun = (f"{ms('by_rerun_ns')} of recomputation (activation checkpointing) matched to the forward it "
             f"repeats, " if cov.get("by_rerun_ns") else "")
    return (f"coverage: {fixed(cov['known_layer_pct'], 2)}% of kernel time ({ms('known_layer_ns')} of "
            f"{ms('kernel_ns')}) has a known layer: {ms('by_seq_ns')} through the autograd seq link "
            f"to the forward op, {annotated}{inferred}{rerun}{ms('by_own_range_ns')} from the launching thread's "
            f"ranges, {ms('by_borrowed_range_ns')} from the range of the thread waiting in backward()")
