"""``nsysql comm``: communication against compute per rank (process and GPU) and step, with each step's straggler."""
from __future__ import annotations

from .common import OUTPUT, SOURCE, ExportsArg, Output, Source, TimeOrigins, add_commands

OPTIONAL = ("analysed", "start_ns", "memory_ns", "comm_kernels", "wall_ns")


def comm(
    exports: ExportsArg,
    out: Output = OUTPUT,
    src: Source = SOURCE,
) -> None:
    """Communication (NCCL kernels) against compute per rank (pid, GPU) and step: compute, communication, the part
    of the communication that compute hides (overlap) and the part it does not (exposed), as unions of intervals
    (overlap + exposed = communication), and per step the straggler: the rank with the most compute, with how far
    it is behind the median rank (behind_median_ns).

    One export per rank, or one export of several processes (e.g. a torchrun capture): ranks are compared step by
    step, each process's steps numbered from 1 (as `nsysql steps` numbers them). Table and markdown show times in ms or µs; csv, json and parquet keep
    nanoseconds."""
    import typer

    from .. import catalog
    from ..comm import STRAGGLER_COLUMNS, with_stragglers
    from ..errors import NsysqlError
    with src.errors():
        origins = TimeOrigins(out.for_people)
        df = with_stragglers(src.gather(exports, origins.wrap(lambda ex: ex.run("analysis.comm"))))
        if df.height == 0:
            raise NsysqlError("no steps with GPU work to compare; `nsysql steps` says how steps are found")
        if df["comm_kernels"].sum() == 0:
            typer.echo("note: no communication kernels (NCCL) in the steps; the table shows compute only", err=True)
        out.emit(df, columns=catalog.get("analysis.comm").columns + STRAGGLER_COLUMNS,
                 title="Communication and compute per rank and step", optional=OPTIONAL,
                 origin=origins.origin(exports))


def register(app) -> None:
    add_commands(app, comm=comm)
