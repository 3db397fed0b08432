"""``nsysql critical-path`` and ``nsysql what-if``: what bounds each step, and what a change would give
(docs/critical-path.md)."""
from __future__ import annotations

from typing import Annotated, Callable, Optional

import typer

from nsysql.cli.common import OUTPUT, SOURCE, ExportsArg, Output, Source, add_commands

StepOpt = Annotated[Optional[int], typer.Option(
    "--step", min=0, help="Only this step (as `nsysql steps` numbers them), analysed or not; default: every analysed "
                          "(steady-state) step.", show_default=False)]
PidOpt = Annotated[Optional[int], typer.Option(
    "--pid", help="With --step: only this process's step (several processes number their steps alike).",
    show_default=False)]


def _no_steps(step: int | None, exports: int):
    """The error when nothing is left to walk: no step `step`, or no analysed step."""
    from nsysql.errors import NsysqlError
    if step is None:
        return NsysqlError("no analysed steps; `nsysql steps` says how steps are found")
    return NsysqlError(f"no step {step} in {'these exports' if exports > 1 else 'this export'}; "
                       "`nsysql steps` lists them")


def _first_note(ex, line: str) -> bool:
    """Whether the note `line` is new for this export (then kept as said: the next run leaves it out)."""
    import hashlib
    return ex.store.first_time(f"critical_path_note {hashlib.sha256(line.encode()).hexdigest()[:12]}")


def critical_path(
    exports: ExportsArg,
    step: StepOpt = None,
    pid: PidOpt = None,
    items: Annotated[bool, typer.Option("--items", help="List the path's items in time order (kind, name, layer, "
                                                         "start, end) instead of its composition.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", help="Say again what the export cannot give (the edges its "
                                                            "tables lack): by default said once per export.")] = False,
    out: Output = OUTPUT,
    src: Source = SOURCE,
) -> None:
    """What bounds each step: the chain of CPU work, CUDA calls, GPU ops, synchronizations and collectives that ends
    last, walked back from the step's end (the end of its NVTX range) to its start. Its length is the step's wall
    time; its composition says where that time went: CPU work (named by its NVTX range), launches and their latency,
    GPU compute, copies, waits for synchronization, and communication (transfer, and waiting for a late rank).

    With several ranks in one export the path of a rank that waits runs through the late rank. So it does with one
    export per rank of a job (aligned and matched as `nsysql comm` does): `on_export` names the rank that ran each
    item, times stay on each export's own clock. The model and its limits: docs/critical-path.md. Table and markdown show times in ms or µs; csv, json and parquet keep
    nanoseconds."""
    from nsysql.answers import critical_path as cp
    from nsysql.answers import critical_path_job as cp_job
    from nsysql.answers.cp_graph import missing_edges
    from nsysql.answers.critical_path_view import (
        ITEM_OPTIONAL,
        ITEM_TEXT_MIN,
        composition_table,
        items_table,
        summary_lines,
    )
    from nsysql.answers.multi import expand, labels
    from nsysql.errors import NsysqlError
    from nsysql.present.render import wrap_note
    with src.errors():
        if pid is not None and step is None:
            raise NsysqlError("--pid chooses among the processes' step N: give --step N with it")
        names = labels(expand(exports))
        with src.job(exports) as (opened, title):
            if len(opened) > 1:  # a job: the ranks' graphs merged, a waiting rank's path runs on through the late one
                comp = cp_job.composition(opened, names, step, pid)
                its = cp_job.item_rows(opened, names, step, pid)
            else:
                comp = cp.composition(opened[0], step, pid)
                its = cp.item_rows(opened[0], step, pid)
            if comp.height == 0:
                raise _no_steps(step, len(opened))
            for line in dict.fromkeys(line for ex in opened for line in missing_edges(ex)
                                      if _first_note(ex, line) or verbose):
                typer.echo(wrap_note(f"note: no {line}"), err=True)
            if items:
                df, columns = items_table(its, out.for_people)
                out.emit(df, columns=columns, title="Critical path items" + (f" of {title}" if title else ""),
                         origin=opened[0].time_origin() if out.for_people and len(opened) == 1 else None,
                         optional=ITEM_OPTIONAL, text_min=ITEM_TEXT_MIN)
                return
            df, columns = composition_table(comp, out.for_people)
            out.emit(df, columns=columns, title="Critical path per step" + (f" of {title}" if title else ""))
            if out.for_people and out.output is None:
                for line in summary_lines(comp, its):
                    typer.echo(line)


def what_if(
    exports: ExportsArg,
    scale: Annotated[list[str], typer.Option(
        "--scale", help="TARGET:PATTERN=FACTOR, repeatable: kernel, layer, copy, comm, wait, range, cpu, api or sync, "
                        "a glob, and a factor (0 removes it), e.g. 'kernel:sm80_xmma*=0.5', 'range:dataloader=0', "
                        "'sync:*=0'.", show_default=False)],
    step: StepOpt = None,
    pid: PidOpt = None,
    out: Output = OUTPUT,
    src: Source = SOURCE,
) -> None:
    """Predict each step's time if some durations changed: the critical-path graph replayed with them scaled (kernels
    by name, layers, copies, communication, waiting for late ranks, CPU work in ranges, CUDA calls, synchronization
    waits), against the measured time.

    Every edge keeps the latency the capture measured on it; with no change the replay gives the measured times
    exactly. What the model does not see (other processes, a launch queue that never filled, new kernels a change
    would add): docs/critical-path.md. With one export per rank of a job, the ranks are replayed together: a change
    on one rank reaches the others through their collectives. Table and markdown show times in ms or µs; csv, json and
    parquet keep nanoseconds."""
    from nsysql.answers import what_if as wi
    from nsysql.answers.critical_path_view import matched_lines, what_if_lines, what_if_table
    from nsysql.answers.multi import expand, labels
    from nsysql.errors import NsysqlError
    from nsysql.present.render import Format, wrap_note
    with src.errors():
        if pid is not None and step is None:
            raise NsysqlError("--pid chooses among the processes' step N: give --step N with it")
        scales = [wi.parse(s) for s in scale]
        with src.job(exports) as (opened, _):
            if len(opened) > 1:  # a job: the ranks replayed together, through their collectives
                df = wi.job_step_times(opened, labels(expand(exports)), scales, step, pid, check=True, matched=True)
            else:
                df = wi.step_times(opened[0], scales, step, pid, check=True, matched=True)
        if df.height == 0:
            raise _no_steps(step, len(opened))
        shown, columns = what_if_table(df if out.fmt is Format.json else df.drop("matched"), out.for_people)
        out.emit(shown, columns=columns, title="What if: " + ", ".join(str(s) for s in scales))
        if out.for_people and out.output is None:
            for line in what_if_lines(df) + matched_lines(df, scales):
                typer.echo(line)
        removed = [str(sc) for sc in scales if sc.target in ("range", "cpu") and sc.factor < 1]
        if removed:  # what the replay assumes of CPU work it shrinks (issue 41: moved work is not removed work)
            typer.echo(wrap_note(f"note: {', '.join(removed)} takes that CPU work away; moved to another thread "
                                 "instead (a prefetcher, DataLoader workers), the step would still wait whenever "
                                 "the producer is behind, and the GIL and CPU contention are not modelled"), err=True)


def register(app: typer.Typer) -> None:
    commands: dict[str, Callable] = {"critical-path": critical_path, "what-if": what_if}
    add_commands(app, **commands)
