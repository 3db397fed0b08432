"""``nsysql comm``: communication against compute per rank (process and GPU) and step, with each step's straggler."""
from __future__ import annotations

from nsysql.cli.common import OUTPUT, SOURCE, ExportsArg, Output, Source, TimeOrigins, add_commands


def comm(
    exports: ExportsArg,
    out: Output = OUTPUT,
    src: Source = SOURCE,
) -> None:
    """Communication (NCCL kernels) against compute per rank and step: compute, communication split into waiting
    for the collective's last rank and transfer, what compute hides (overlap) and what it does not (exposed), as
    unions of intervals; how late the rank arrived, and per step the straggler: the rank the others wait for.

    One export of several processes (e.g. one nsys over torchrun), or one export per rank of one job: their clocks
    are aligned and their collectives matched (a note says how well); ranks are compared step by step, each
    process's steps numbered from 1 (as `nsysql steps` numbers them). Table and markdown show times in ms or µs; csv, json and parquet keep
    nanoseconds."""
    import typer

    from nsysql.answers.job import match_note
    from nsysql.errors import NsysqlError
    from nsysql.present.render import wrap_note
    from nsysql.sql import catalog
    with src.errors():
        origins = TimeOrigins(out.for_people)
        notes: list[str] = []

        def rows(ex):
            if (line := match_note(ex.run("analysis.comm_waits"))) and len(exports) == 1:
                notes.append(line)  # several exports: the job's line says it (nsysql/answers/job.py)
            return ex.run("analysis.comm")
        df = src.gather(exports, origins.wrap(rows))
        for line in notes:
            typer.echo(wrap_note(line), err=True)
        if df.height == 0:
            raise NsysqlError("no steps with GPU work to compare; `nsysql steps` says how steps are found")
        if df["comm_kernels"].sum() == 0:
            typer.echo("note: no communication kernels (NCCL) in the steps; the table shows compute only", err=True)
        out.emit(df, query=catalog.get("analysis.comm"),
                 title="Communication and compute per rank and step", origin=origins.origin(exports))


def collectives(
    exports: ExportsArg,
    out: Output = OUTPUT,
    src: Source = SOURCE,
) -> None:
    """Collectives per operation (AllReduce, AllGather, ReduceScatter, Broadcast, ...) over every rank: kernels,
    collectives matched across ranks, their time split into waiting for the last rank and transfer, the NCCL
    algorithm and protocol, and with NCCL's payloads (`nsys export --include-blobs=true`) the mean message size and
    the bus bandwidth of the transfer.

    Counts equal NVIDIA's `nsys recipe nccl_sum` where each NCCL call launched one kernel. One export of several
    processes, or the exports of one job (matched across them: one row per export and operation)."""
    import typer

    from nsysql.errors import NsysqlError
    from nsysql.present.render import wrap_note
    from nsysql.sql import catalog
    with src.errors():
        df = src.gather(exports, lambda ex: ex.run("analysis.collectives"))
        if df.height == 0:
            raise NsysqlError("no communication kernels (NCCL) to summarize")
        if df["mean_message_bytes"].is_null().all():
            if out.for_people:  # nothing to show in them
                df = df.drop("mean_message_bytes", "bus_gb_per_s")
            typer.echo(wrap_note("note: message sizes and bus bandwidth need NCCL's NVTX payloads: export with "
                                 "`nsys export --type sqlite --include-blobs=true -o X.sqlite X.nsys-rep`"), err=True)
        out.emit(df, query=catalog.get("analysis.collectives"), title="Collectives per operation")


def register(app) -> None:
    add_commands(app, comm=comm, collectives=collectives)
