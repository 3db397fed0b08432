#!/usr/bin/env python3
"""Synthetic nsys exports whose critical path is known by hand (issue 34, docs/critical-path.md).

Each case is an export built with scripts/make_synthetic.py's SyntheticExport and the answer
`nsysql critical-path` and `nsysql what-if` must give on it, worked out by hand from the rules of
docs/critical-path.md (the walk's rules 1-6 and the replay) in the case's docstring. Every case has
two `profiled_step` ranges of the same length, 1 ms apart (steps 1 and 2, both analysed: no warm-up
range, and the first step is not slower than the second), whose rows are the same shifted by 1 ms,
so the expected path of either step is written once, in ns after the step's start. The GPU work of
a step ends long before the next step starts, so no step's path reaches into another.

Conventions the expectations assume where docs/critical-path.md leaves a choice (the tests hold
nsysql to them; each is a question put to the author of the doc):

- a CPU piece is named by the innermost user range over it, the step range `profiled_step` itself
  included (it is a user range); `thread NAME` outside every range (`(no range)` on a thread without a name);
- a CUDA call's item is named by the API's short name (`cudaLaunchKernel`, not `cudaLaunchKernel_v7000`),
  a GPU op's by its name (the kernel's demangled name, `[CUDA memcpy Host-to-Device]` for a copy),
  an OS-runtime wait's by its function (`pthread_cond_wait`);
- the `sync_wait` of a waiting call is named by the call; a launch latency gap [r, o.start] (rule 5) is
  part of the launching call's item (kind `launch`, the API's name: [call start, o.start]); a gap of the
  op's own kind (after a stream or event predecessor) is part of the op's item; a zero-length interval
  is no item;
- a call that waited for its own op (a blocking cudaMemcpy) does not bind that op's start by its end
  (case `blocking_copy`);
- in the replay, an edge that did not bind keeps at most the lag of the edge that bound its node
  (the cases are built so that any lag from 0 to that one gives the same prediction), and a waiting
  call is all wait: blocked until its op ended, then the wake-up that rule 3 counts as sync_wait too,
  so `sync:...=0` leaves it no time.

Library use: `CASES[name]` is a `Case`; `Case.build()` returns the SyntheticExport.
CLI: `python scripts/make_critical_path_cases.py OUTDIR` writes every case as OUTDIR/<case>.sqlite.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the builder beside this script, however it is run
import make_synthetic as ms  # noqa: E402

KINDS = ("cpu", "launch", "gpu_compute", "copy", "sync_wait", "comm_transfer", "comm_wait")
STEP_STARTS = (1_000_000, 2_000_000)  # step k starts at STEP_STARTS[k - 1] (all cases but carry_over)
BACK_TO_BACK = (1_000_000, 1_050_000)  # carry_over's steps: the second starts where the first ends
STEP_RANGE = "profiled_step"
P, MAIN, AUTOGRAD = 100, 100, 101  # one process: pid 100, main thread 100, autograd thread 101
RANK1 = 200  # two_ranks: the second process (pid and main thread 200, on GPU 1)
NCCL_ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
AUTOGRAD_CPU = "thread pt_autograd_0"  # CPU work outside every range is named by its thread
LAUNCH = "cudaLaunchKernel"  # the short API name items carry (the export stores cudaLaunchKernel_v7000)
HTOD_NAME, DTOH_NAME = "[CUDA memcpy Host-to-Device]", "[CUDA memcpy Device-to-Host]"


@dataclass(frozen=True)
class Item:
    """One item of a path: kind, name, on which process, [start, end) in ns after the step's start."""
    kind: str
    name: str
    start: int
    end: int
    on_pid: int = P


@dataclass(frozen=True)
class StepPath:
    """The expected critical path of each analysed step of one process."""
    wall_ns: int
    composition: dict[str, int]  # kind -> ns, worked out by hand (tests check it against the items too)
    items: tuple[Item, ...]


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], "ms.SyntheticExport"]
    paths: dict[int, StepPath]  # pid -> the path of each of its steps
    what_if: dict[tuple[str, ...], dict[int, int]] = field(default_factory=dict)  # scales -> {pid: predicted_ns}
    step_starts: tuple[int, ...] = STEP_STARTS

    @property
    def doc(self) -> str:
        return self.build.__doc__ or ""


def composition(**ns: int) -> dict[str, int]:
    unknown = set(ns) - set(KINDS)
    if unknown:
        raise ValueError(f"not kinds of a path: {sorted(unknown)}")
    return {kind: ns.get(kind, 0) for kind in KINDS}


def _steps(b: "ms.SyntheticExport", pid: int, tid: int, wall: int, starts: tuple[int, ...] = STEP_STARTS) -> None:
    for base in starts:
        b.range(STEP_RANGE, base, base + wall, pid=pid, tid=tid)


def _one_thread(wall: int, starts: tuple[int, ...] = STEP_STARTS) -> tuple["ms.SyntheticExport", "ms.OnThread"]:
    """An export of process P with its main thread MAIN (returned too) and its steps of `wall` ns at `starts`."""
    b = ms.SyntheticExport().thread(P, MAIN, "python3")
    _steps(b, P, MAIN, wall, starts)
    return b, b.on(P, MAIN)


def _corr(step_index: int, n: int) -> int:
    """A correlation id unique in the export: step 0 uses 1.., step 1 uses 101.."""
    return 100 * step_index + n


# ---------------------------------------------------------------------------------------------
# Cases. Offsets below are ns after the step's start; every step repeats them.
# ---------------------------------------------------------------------------------------------
def cpu_bound() -> "ms.SyntheticExport":
    """Python work between two short launches; the step ends with CPU work in `optimizer`.

        tid 100: profiled_step [0, 100000]
          data [1000, 29000]; model [40000, 69000]; optimizer [80000, 100000] (user ranges, no calls)
          corr 1 cudaLaunchKernel [30000, 35000] -> elementwise_small [36000, 40000] stream 7
          corr 2 cudaLaunchKernel [70000, 75000] -> elementwise_small [76000, 80000] stream 7

    Walk from c = 100000: nothing waits for a kernel, so the path never leaves the thread (rules 1
    and 2): optimizer [80000, 100000], profiled_step [75000, 80000], launch [70000, 75000],
    profiled_step [69000, 70000], model [40000, 69000], profiled_step [35000, 40000], launch
    [30000, 35000], profiled_step [29000, 30000], data [1000, 29000], profiled_step [0, 1000].
    cpu 1000+28000+1000+5000+29000+1000+5000+20000 = 90000, launch 5000+5000 = 10000.
    What-if: range:model=0 takes the 29000 of `model` off the thread: 71000; kernel:*=0.5
    changes nothing on the thread: 100000.
    """
    b, main = _one_thread(100000)
    for i, t in enumerate(STEP_STARTS):
        main.range("data", t + 1000, t + 29000)
        main.range("model", t + 40000, t + 69000)
        main.range("optimizer", t + 80000, t + 100000)
        main.launch(t + 30000, t + 35000, _corr(i, 1), "elementwise_small", t + 36000, t + 40000)
        main.launch(t + 70000, t + 75000, _corr(i, 2), "elementwise_small", t + 76000, t + 80000)
    return b


def gpu_bound() -> "ms.SyntheticExport":
    """Three short launches of long kernels on one stream; cudaDeviceSynchronize waits for the last.

        tid 100: profiled_step [0, 100000]
          corr 1 cudaLaunchKernel [2000, 5000]   -> gemm_a [6000, 36000]   stream 7
          corr 2 cudaLaunchKernel [6000, 9000]   -> gemm_b [36000, 66000]  stream 7 (queued behind gemm_a)
          corr 3 cudaLaunchKernel [10000, 13000] -> gemm_c [66000, 96000]  stream 7
          corr 4 cudaDeviceSynchronize [14000, 97000] (no SYNCHRONIZATION row, as in a real export)

    Walk from c = 100000: profiled_step [97000, 100000] (rule 1). cudaDeviceSynchronize is a
    synchronize call; the process's op that ended last before it returned is gemm_c (96000), after
    the call began: rule 3, sync_wait [96000, 97000], go to gemm_c. gemm_c [66000, 96000] and gemm_b
    [36000, 66000]: the stream predecessor is ready last (66000, 36000 vs. the launches' ends 13000,
    9000), at the op's start: no gap (rule 5). gemm_a [6000, 36000]: its launch is ready last (5000;
    in step 2 the stream's previous op, step 1's gemm_c, ended 1 ms before): gap [5000, 6000] is
    launch latency, then the call [2000, 5000] (rule 2): one launch item [2000, 6000]; profiled_step
    [0, 2000].
    cpu 2000+3000 = 5000, launch 3000+1000 = 4000, gpu_compute 90000, sync_wait 1000.
    What-if kernel:*=0.5: gemm_a [6000, 21000] (launch lag 1000 kept), gemm_b [21000, 36000],
    gemm_c [36000, 51000] (the launches, ready at 9000 and 13000, bound nothing), the sync ends
    1000 after gemm_c: 52000, +3000 of CPU: 55000. kernel:gemm_b=0: gemm_c [36000, 66000]: 70000.
    """
    b, main = _one_thread(100000)
    for i, t in enumerate(STEP_STARTS):
        main.launch(t + 2000, t + 5000, _corr(i, 1), "gemm_a", t + 6000, t + 36000)
        main.launch(t + 6000, t + 9000, _corr(i, 2), "gemm_b", t + 36000, t + 66000)
        main.launch(t + 10000, t + 13000, _corr(i, 3), "gemm_c", t + 66000, t + 96000)
        b.runtime("cudaDeviceSynchronize_v3020", t + 14000, t + 97000, tid=MAIN, pid=P, correlation_id=_corr(i, 4))
    return b


def cross_stream_wait() -> "ms.SyntheticExport":
    """A kernel on stream 13 waits (cudaEventRecord on 7, cudaStreamWaitEvent on 13) for a long kernel on 7.

        tid 100: profiled_step [0, 80000]
          corr 1 cudaLaunchKernel [2000, 5000] -> attention_long [5000, 65000] stream 7
          corr 2 cudaEventRecord [6000, 8000]: CUDA_EVENT stream 7, eventId 1, eventSyncId = step (1, 2)
          corr 3 cudaStreamWaitEvent [9000, 11000]: SYNCHRONIZATION [9500, 10500] stream 13, type 2,
                 eventId 1, eventSyncId = step
          corr 4 cudaLaunchKernel [12000, 15000] -> consumer_b [66000, 76000] stream 13
          corr 5 cudaStreamSynchronize [16000, 78000]: SYNCHRONIZATION [16500, 77500] stream 13, type 2,
                 no event (as a real export stores it)

    Walk from c = 80000: profiled_step [78000, 80000]. cudaStreamSynchronize waits for the last op on
    its stream 13 before it returned, consumer_b (76000): sync_wait [76000, 78000]. consumer_b's
    predecessors: its launch (ready 15000) and the cross-stream wait's op attention_long (the last op on
    stream 7 launched before the record; ready 65000): the wait binds, and the gap [65000, 66000] after
    it is latency: launch `(latency) consumer_b` [65000, 66000], then gpu_compute consumer_b [66000, 76000]. attention_long [5000, 65000]: its
    launch binds at its start (no gap). The call [2000, 5000], profiled_step [0, 2000].
    cpu 2000+2000 = 4000, launch 3000+1000 = 4000, gpu_compute 60000+10000 = 70000, sync_wait 2000.
    What-if kernel:attention_long=0.5: attention_long [5000, 35000], consumer_b [36000, 46000] (wait lag
    1000 kept; the launch, ready 15000, binds nothing), the sync ends 2000 later: 48000, +2000: 50000.
    """
    b, main = _one_thread(80000)
    for i, t in enumerate(STEP_STARTS):
        main.launch(t + 2000, t + 5000, _corr(i, 1), "attention_long", t + 5000, t + 65000, stream=7)
        b.runtime("cudaEventRecord_v3020", t + 6000, t + 8000, tid=MAIN, pid=P, correlation_id=_corr(i, 2))
        b.cuda_event(pid=P, correlation_id=_corr(i, 2), stream=7, event_id=1, event_sync_id=i + 1)
        b.runtime("cudaStreamWaitEvent_v3020", t + 9000, t + 11000, tid=MAIN, pid=P, correlation_id=_corr(i, 3))
        b.synchronization(t + 9500, t + 10500, pid=P, correlation_id=_corr(i, 3), stream=13,
                          sync_type=ms.SYNC_STREAM_WAIT_EVENT, event_id=1, event_sync_id=i + 1)
        main.launch(t + 12000, t + 15000, _corr(i, 4), "consumer_b", t + 66000, t + 76000, stream=13)
        b.runtime("cudaStreamSynchronize_v3020", t + 16000, t + 78000, tid=MAIN, pid=P, correlation_id=_corr(i, 5))
        b.synchronization(t + 16500, t + 77500, pid=P, correlation_id=_corr(i, 5), stream=13)
    return b


def sync() -> "ms.SyntheticExport":
    """An async copy and a kernel on one stream, then cudaStreamSynchronize waits for the kernel.

        tid 100: profiled_step [0, 70000]; loss [60000, 70000]
          corr 1 cudaMemcpyAsync [3000, 6000] -> HtoD Pinned 4 MB [7000, 17000] stream 7
          corr 2 cudaLaunchKernel [8000, 11000] -> conv_fwd [17000, 57000] stream 7
          corr 3 cudaStreamSynchronize [12000, 59000]: SYNCHRONIZATION [12500, 58500] stream 7, type 2,
                 no event

    Walk from c = 70000: loss [60000, 70000], profiled_step [59000, 60000]. cudaStreamSynchronize
    waits for conv_fwd (the last op on stream 7 before it returned): sync_wait [57000, 59000].
    conv_fwd [17000, 57000]: the copy before it on the stream binds (17000 vs. its launch's 11000),
    at its start. The copy [7000, 17000]: its call (not waiting: async, returned before the copy
    ended) binds at 6000 (the stream had nothing before it in the step): latency [6000, 7000], then
    the call [3000, 6000]: one item cudaMemcpyAsync [3000, 7000]; profiled_step [0, 3000].
    cpu 3000+1000+10000 = 14000, launch 3000+1000 = 4000, copy 10000, gpu_compute 40000, sync_wait 2000.
    What-if sync:*=0: the call no longer waits, and all of it was wait (blocked until conv_fwd ended,
    then the wake-up rule 3 counts as sync_wait), so it takes no time: the thread runs 3000+3000+2000
    +3000+1000 to the sync's start (12000), then 1000+10000: 23000.
    copy:*=0.5: copy [7000, 12000], conv_fwd [12000, 52000], sync ends 54000, +11000: 65000.
    """
    b, main = _one_thread(70000)
    for i, t in enumerate(STEP_STARTS):
        main.range("loss", t + 60000, t + 70000)
        b.memcpy(t + 7000, t + 17000, 4_000_000, pid=P, correlation_id=_corr(i, 1), src_kind=ms.PINNED,
                 api_start=t + 3000, api_end=t + 6000, tid=MAIN)
        main.launch(t + 8000, t + 11000, _corr(i, 2), "conv_fwd", t + 17000, t + 57000)
        b.runtime("cudaStreamSynchronize_v3020", t + 12000, t + 59000, tid=MAIN, pid=P, correlation_id=_corr(i, 3))
        b.synchronization(t + 12500, t + 58500, pid=P, correlation_id=_corr(i, 3), stream=7)
    return b


def blocking_copy() -> "ms.SyntheticExport":
    """`.item()`: a blocking cudaMemcpy of 4 bytes to pageable memory waits for the kernel before its copy.

        tid 100: profiled_step [0, 60000]; metrics [49000, 60000]
          corr 1 cudaLaunchKernel [2000, 5000] -> reduce_sum [5000, 45000] stream 7
          corr 2 cudaMemcpy [6000, 48000] -> DtoH Pageable 4 B [45000, 47000] stream 7

    Walk from c = 60000: metrics [49000, 60000], profiled_step [48000, 49000]. cudaMemcpy is a
    blocking copy; the last op on its stream before it returned is its copy (47000): sync_wait
    [47000, 48000]. The copy [45000, 47000]: the stream's reduce_sum ended at its start. Its launch
    call is the cudaMemcpy itself, which returned at 48000, after the copy: read literally, rule 5
    would make that call the copy's binding predecessor (ready last, at 48000) and the path would
    run through the call's middle, [6000, 45000] as `launch`. A call cannot bind the start of an op it
    waited to finish, so the expectation takes the stream: reduce_sum [5000, 45000] (its launch binds
    at its start), the call [2000, 5000], profiled_step [0, 2000].
    cpu 2000+1000+11000 = 14000, launch 3000, gpu_compute 40000, copy 2000, sync_wait 1000.
    What-if kernel:*=0.5: reduce_sum [5000, 25000], the copy [25000, 27000], the call returns 1000
    after it: 28000, +12000: 40000.
    """
    b, main = _one_thread(60000)
    for i, t in enumerate(STEP_STARTS):
        main.range("metrics", t + 49000, t + 60000)
        main.launch(t + 2000, t + 5000, _corr(i, 1), "reduce_sum", t + 5000, t + 45000)
        b.memcpy(t + 45000, t + 47000, 4, pid=P, correlation_id=_corr(i, 2), copy_kind=ms.DTOH,
                 src_kind=ms.DEVICE, dst_kind=ms.PAGEABLE, api="cudaMemcpy_v3020", api_start=t + 6000,
                 api_end=t + 48000, tid=MAIN)
    return b


def launch_overlap() -> "ms.SyntheticExport":
    """A kernel that starts before its launch call returns (common when the GPU is idle), then a stream sync.

        tid 100: profiled_step [0, 50000]
          corr 1 cudaLaunchKernel [2000, 6000] -> softmax [4000, 40000] stream 7
          corr 2 cudaStreamSynchronize [8000, 41000]: SYNCHRONIZATION [8500, 40500] stream 7, type 2, no event

    Walk from c = 50000: profiled_step [41000, 50000]; cudaStreamSynchronize waits for softmax (40000):
    sync_wait [40000, 41000]. softmax [4000, 40000]: its only predecessor in the step is its launch,
    ready at 6000, after the op's start: no gap, continue at the call with c = min(6000, 4000) = 4000,
    the call reached in its middle (rule 2): launch [2000, 4000]; profiled_step [0, 2000].
    cpu 2000+9000 = 11000, launch 2000, gpu_compute 36000, sync_wait 1000.
    What-if kernel:*=0.5: the launch edge keeps its measured lag, -2000 (the identity needs it: softmax
    starts at 4000 again), softmax [4000, 22000], the sync ends 23000, +9000: 32000.
    """
    b, main = _one_thread(50000)
    for i, t in enumerate(STEP_STARTS):
        main.launch(t + 2000, t + 6000, _corr(i, 1), "softmax", t + 4000, t + 40000)
        b.runtime("cudaStreamSynchronize_v3020", t + 8000, t + 41000, tid=MAIN, pid=P, correlation_id=_corr(i, 2))
        b.synchronization(t + 8500, t + 40500, pid=P, correlation_id=_corr(i, 2), stream=7)
    return b


def carry_over() -> "ms.SyntheticExport":
    """Back-to-back steps, each ending with the launch of a kernel that runs into the next step, which begins
    by synchronizing with it (a GPU-bound loop whose host reads last step's result first).

        tid 100: profiled_step [0, 50000], the next one at 50000 (steps 1 and 2 at 1000000 and 1050000)
          corr 2k   cudaStreamSynchronize [1000, 21000]: SYNCHRONIZATION [1500, 20500] stream 7, no event
          corr 2k+1 cudaLaunchKernel [40000, 43000] -> big_k [43000, 70000] stream 7 (20000 into the next step)
        before step 1: corr 1 cudaLaunchKernel [-10000, -7000] -> big_k [-7000, 20000] stream 7 (no step)

    Walk from c = 50000: profiled_step [43000, 50000], the launch [40000, 43000], profiled_step
    [21000, 40000]; cudaStreamSynchronize waits for the big_k launched before the step (ends 20000):
    sync_wait [20000, 21000]; that big_k began at -7000, before the step: the walk stops at the step's
    start, gpu_compute [0, 20000]. The big_k this step launches is on no path of it.
    cpu 7000+19000 = 26000, launch 3000, gpu_compute 20000, sync_wait 1000.
    What-if kernel:*=0.5 (big_k 13500): the kernel before step 1 ends at 6500, the sync 1000 later
    (7500), then 19000 of CPU, the launch (29500), 7000 of CPU: step 1 ends at 36500; its big_k runs
    [29500, 43000], 6500 into step 2, which repeats step 1: 36500 each.
    """
    b, main = _one_thread(50000, BACK_TO_BACK)
    first = BACK_TO_BACK[0]
    main.launch(first - 10000, first - 7000, 1, "big_k", first - 7000, first + 20000)
    for i, t in enumerate(BACK_TO_BACK):
        b.runtime("cudaStreamSynchronize_v3020", t + 1000, t + 21000, tid=MAIN, pid=P, correlation_id=2 * i + 2)
        b.synchronization(t + 1500, t + 20500, pid=P, correlation_id=2 * i + 2, stream=7)
        main.launch(t + 40000, t + 43000, 2 * i + 3, "big_k", t + 43000, t + 70000)
    return b


def queue_full() -> "ms.SyntheticExport":
    """A launch that blocks 96 us on a full launch queue and returns just after an earlier kernel ended.

        tid 100: profiled_step [0, 120000]; optimizer [107000, 120000]
          corr 1 cudaLaunchKernel [2000, 5000]    -> big_gemm_1 [5000, 105000]   stream 7
          corr 2 cudaLaunchKernel [6000, 9000]    -> big_gemm_2 [105000, 185000] stream 7
          corr 3 cudaLaunchKernel [10000, 106000] -> small_k [185000, 195000]    stream 7
        (big_gemm_2 and small_k run after the step's end: they are on no path of these steps)

    Walk from c = 120000: optimizer [107000, 120000], profiled_step [106000, 107000]. corr 3 lasted
    96000 >= 50000 and big_gemm_1 ended inside it: a launch blocked by a full queue, waiting for the
    last op on its stream (7) that ended before it returned, big_gemm_1 (105000): sync_wait [105000,
    106000]. big_gemm_1 [5000, 105000], its launch binding at its start; the call [2000, 5000],
    profiled_step [0, 2000].
    cpu 2000+1000+13000 = 16000, launch 3000, gpu_compute 100000, sync_wait 1000.
    What-if kernel:*=0.5: big_gemm_1 [5000, 55000]; the blocked launch returns 1000 after it: 56000
    (its own 1000 from its start 10000 binds nothing), +14000: 70000.
    """
    b, main = _one_thread(120000)
    for i, t in enumerate(STEP_STARTS):
        main.range("optimizer", t + 107000, t + 120000)
        main.launch(t + 2000, t + 5000, _corr(i, 1), "big_gemm_1", t + 5000, t + 105000)
        main.launch(t + 6000, t + 9000, _corr(i, 2), "big_gemm_2", t + 105000, t + 185000)
        main.launch(t + 10000, t + 106000, _corr(i, 3), "small_k", t + 185000, t + 195000)
    return b


def thread_wakeup() -> "ms.SyntheticExport":
    """The main thread waits in pthread_cond_wait while the autograd thread launches the backward.

        tid 100 python3: profiled_step [0, 100000]; optimizer [83000, 100000]
          corr 1 cudaLaunchKernel [3000, 6000] -> embedding_fwd [6000, 16000] stream 7
          OSRT pthread_cond_wait [10000, 82000]
        tid 101 pt_autograd_0 (no user ranges):
          OSRT pthread_cond_wait [85000 of the step before (step 1: -100000), 7000]
          corr 2 cudaLaunchKernel [20000, 23000] -> mm_bwd_1 [23000, 43000] stream 7
          corr 3 cudaLaunchKernel [50000, 53000] -> mm_bwd_2 [53000, 73000] stream 7
          corr 4 cudaLaunchKernel [75000, 80000] -> mm_bwd_3 [80000, 90000] stream 7

    Walk from c = 100000: optimizer [83000, 100000], profiled_step [82000, 83000]. The main thread's
    pthread_cond_wait: the other thread's CUDA or OS-runtime call that ended last inside it is corr 4
    (80000): sync_wait [80000, 82000] (rule 4), go to corr 4: launch [75000, 80000] on tid 101,
    then tid 101's pieces back: thread pt_autograd_0 [53000, 75000], launch [50000, 53000], thread
    pt_autograd_0 [23000, 50000], launch [20000, 23000], thread pt_autograd_0 [7000, 20000]. tid 101's pthread_cond_wait ends at 7000;
    the main thread's call that ended last inside it is corr 1 (6000): sync_wait [6000, 7000], then
    corr 1 [3000, 6000] and profiled_step [0, 3000].
    cpu 3000+13000+27000+22000+1000+17000 = 83000, launch 3000+3000+3000+5000 = 14000,
    sync_wait 1000+2000 = 3000.
    What-if api:cudaLaunchKernel*=0: the four calls on the path take no time, the wake-up lags (1000,
    2000) stay: 100000 - 14000 = 86000. range:optimizer=0: 83000.
    """
    b = ms.SyntheticExport().thread(P, MAIN, "python3").thread(P, AUTOGRAD, "pt_autograd_0", process_name="python3")
    main, autograd = b.on(P, MAIN), b.on(P, AUTOGRAD)
    _steps(b, P, MAIN, 100000)
    for i, t in enumerate(STEP_STARTS):
        main.range("optimizer", t + 83000, t + 100000)
        main.launch(t + 3000, t + 6000, _corr(i, 1), "embedding_fwd", t + 6000, t + 16000)
        main.osrt("pthread_cond_wait", t + 10000, t + 82000)
        woken_from = STEP_STARTS[i - 1] + 85000 if i else t - 100000
        autograd.osrt("pthread_cond_wait", woken_from, t + 7000)
        autograd.launch(t + 20000, t + 23000, _corr(i, 2), "mm_bwd_1", t + 23000, t + 43000)
        autograd.launch(t + 50000, t + 53000, _corr(i, 3), "mm_bwd_2", t + 53000, t + 73000)
        autograd.launch(t + 75000, t + 80000, _corr(i, 4), "mm_bwd_3", t + 80000, t + 90000)
    return b


def two_ranks() -> "ms.SyntheticExport":
    """Two ranks in one export (one nsys over torchrun): rank 1 arrives late at the all-reduce because of
    CPU work in `dataloader`; rank 0's path runs through rank 1's launch and dataloader.

        pid 100 (rank 0, GPU 0), tid 100: profiled_step [0, 100000]; optimizer [83000, 100000]
          corr 1 cudaLaunchKernel [2000, 5000]   -> conv_fwd [5000, 25000] stream 7
          corr 2 cudaLaunchKernel [10000, 13000] -> NCCL all-reduce [13000, 80000] stream 20
          corr 3 cudaDeviceSynchronize [15000, 82000]
        pid 200 (rank 1, GPU 1), tid 200: profiled_step [0, 100000]; dataloader [2000, 49000];
          optimizer [82000, 100000]
          corr 1 cudaLaunchKernel [50000, 53000] -> conv_fwd [53000, 63000] stream 7
          corr 2 cudaLaunchKernel [55000, 58000] -> NCCL all-reduce [58000, 80000] stream 20
          corr 3 cudaDeviceSynchronize [60000, 81000]
        The all-reduces are each rank's 1st (step 1) and 2nd (step 2) kernel on its only NCCL stream:
        matched by (stream_order, seq); last arrival L = 58000, rank 0 waits [13000, 58000].

    Rank 0, from c = 100000: optimizer [83000, 100000], profiled_step [82000, 83000].
    cudaDeviceSynchronize waits for the all-reduce (80000): sync_wait [80000, 82000]. The all-reduce,
    matched, last arrival 58000 after its start (rule 6): comm_transfer [58000, 80000]; rank 1's
    instance is in the export: go to it at its start, 58000 (its own interval is empty). Its launch
    binds there: rank 1's corr 2 [55000, 58000], profiled_step [53000, 55000], corr 1 [50000, 53000],
    profiled_step [49000, 50000], dataloader [2000, 49000], profiled_step [0, 2000], all on pid 200.
    cpu 2000+47000+1000+2000+1000+17000 = 70000, launch 6000, comm_transfer 22000, sync_wait 2000.
    Rank 1, from c = 100000: optimizer [82000, 100000], profiled_step [81000, 82000], sync_wait
    [80000, 81000]; its all-reduce is the last arrival (rule 5): comm_transfer [58000, 80000], then
    the same pieces of pid 200 as above. cpu 71000, launch 6000, comm_transfer 22000, sync_wait 1000.
    What-if range:dataloader=0: rank 1 launches its all-reduce at 11000, rank 0 at 13000: L = 13000,
    both end at 13000 + 22000 = 35000; rank 0's sync ends 37000, +18000: 55000; rank 1's starts
    13000 and ends 36000, +19000: 55000. wait:*=0: rank 0's all-reduce ends at 13000 + 22000,
    55000 as well; rank 1 never waited: 100000.
    """
    b = ms.SyntheticExport().thread(P, MAIN, "python3").thread(RANK1, RANK1, "python3")
    rank0, rank1 = b.on(P, MAIN), b.on(RANK1, RANK1)
    _steps(b, P, MAIN, 100000)
    _steps(b, RANK1, RANK1, 100000)
    for i, t in enumerate(STEP_STARTS):
        rank0.range("optimizer", t + 83000, t + 100000)
        rank0.launch(t + 2000, t + 5000, _corr(i, 1), "conv_fwd", t + 5000, t + 25000, stream=7, device=0)
        rank0.launch(t + 10000, t + 13000, _corr(i, 2), NCCL_ALLREDUCE, t + 13000, t + 80000, stream=20, device=0)
        b.runtime("cudaDeviceSynchronize_v3020", t + 15000, t + 82000, tid=MAIN, pid=P, correlation_id=_corr(i, 3))
        rank1.range("dataloader", t + 2000, t + 49000)
        rank1.range("optimizer", t + 82000, t + 100000)
        rank1.launch(t + 50000, t + 53000, _corr(i, 1), "conv_fwd", t + 53000, t + 63000, stream=7, device=1)
        rank1.launch(t + 55000, t + 58000, _corr(i, 2), NCCL_ALLREDUCE, t + 58000, t + 80000, stream=20, device=1)
        b.runtime("cudaDeviceSynchronize_v3020", t + 60000, t + 81000, tid=RANK1, pid=RANK1,
                  correlation_id=_corr(i, 3))
    return b


# ---------------------------------------------------------------------------------------------
# The expected answers (the reasoning is in each case's docstring)
# ---------------------------------------------------------------------------------------------
PS = STEP_RANGE
IDENTITY = ("kernel:*=1",)  # a scale of 1 changes nothing: the replay must give the measured times

CASES: dict[str, Case] = {c.name: c for c in (
    Case("cpu_bound", cpu_bound, {P: StepPath(
        100000, composition(cpu=90000, launch=10000),
        (Item("cpu", PS, 0, 1000), Item("cpu", "data", 1000, 29000), Item("cpu", PS, 29000, 30000),
         Item("launch", LAUNCH, 30000, 35000), Item("cpu", PS, 35000, 40000), Item("cpu", "model", 40000, 69000),
         Item("cpu", PS, 69000, 70000), Item("launch", LAUNCH, 70000, 75000), Item("cpu", PS, 75000, 80000),
         Item("cpu", "optimizer", 80000, 100000)))},
         {IDENTITY: {P: 100000}, ("range:model=0",): {P: 71000}, ("kernel:*=0.5",): {P: 100000}}),
    Case("gpu_bound", gpu_bound, {P: StepPath(
        100000, composition(cpu=5000, launch=4000, gpu_compute=90000, sync_wait=1000),
        (Item("cpu", PS, 0, 2000), Item("launch", LAUNCH, 2000, 6000), Item("gpu_compute", "gemm_a", 6000, 36000), Item("gpu_compute", "gemm_b", 36000, 66000),
         Item("gpu_compute", "gemm_c", 66000, 96000), Item("sync_wait", "cudaDeviceSynchronize", 96000, 97000),
         Item("cpu", PS, 97000, 100000)))},
         {IDENTITY: {P: 100000}, ("kernel:*=0.5",): {P: 55000}, ("kernel:gemm_b=0",): {P: 70000}}),
    Case("cross_stream_wait", cross_stream_wait, {P: StepPath(
        80000, composition(cpu=4000, launch=4000, gpu_compute=70000, sync_wait=2000),
        (Item("cpu", PS, 0, 2000), Item("launch", LAUNCH, 2000, 5000),
         Item("gpu_compute", "attention_long", 5000, 65000), Item("launch", "(latency) consumer_b", 65000, 66000),
         Item("gpu_compute", "consumer_b", 66000, 76000),
         Item("sync_wait", "cudaStreamSynchronize", 76000, 78000), Item("cpu", PS, 78000, 80000)))},
         {IDENTITY: {P: 80000}, ("kernel:attention_long=0.5",): {P: 50000}}),
    Case("sync", sync, {P: StepPath(
        70000, composition(cpu=14000, launch=4000, copy=10000, gpu_compute=40000, sync_wait=2000),
        (Item("cpu", PS, 0, 3000), Item("launch", "cudaMemcpyAsync", 3000, 7000), Item("copy", HTOD_NAME, 7000, 17000),
         Item("gpu_compute", "conv_fwd", 17000, 57000), Item("sync_wait", "cudaStreamSynchronize", 57000, 59000),
         Item("cpu", PS, 59000, 60000), Item("cpu", "loss", 60000, 70000)))},
         {IDENTITY: {P: 70000}, ("sync:*=0",): {P: 23000}, ("copy:*=0.5",): {P: 65000}}),
    Case("blocking_copy", blocking_copy, {P: StepPath(
        60000, composition(cpu=14000, launch=3000, gpu_compute=40000, copy=2000, sync_wait=1000),
        (Item("cpu", PS, 0, 2000), Item("launch", LAUNCH, 2000, 5000), Item("gpu_compute", "reduce_sum", 5000, 45000),
         Item("copy", DTOH_NAME, 45000, 47000), Item("sync_wait", "cudaMemcpy", 47000, 48000),
         Item("cpu", PS, 48000, 49000), Item("cpu", "metrics", 49000, 60000)))},
         {IDENTITY: {P: 60000}, ("kernel:*=0.5",): {P: 40000}}),
    Case("launch_overlap", launch_overlap, {P: StepPath(
        50000, composition(cpu=11000, launch=2000, gpu_compute=36000, sync_wait=1000),
        (Item("cpu", PS, 0, 2000), Item("launch", LAUNCH, 2000, 4000), Item("gpu_compute", "softmax", 4000, 40000),
         Item("sync_wait", "cudaStreamSynchronize", 40000, 41000), Item("cpu", PS, 41000, 50000)))},
         {IDENTITY: {P: 50000}, ("kernel:*=0.5",): {P: 32000}}),
    Case("carry_over", carry_over, {P: StepPath(
        50000, composition(cpu=26000, launch=3000, gpu_compute=20000, sync_wait=1000),
        (Item("gpu_compute", "big_k", 0, 20000), Item("sync_wait", "cudaStreamSynchronize", 20000, 21000),
         Item("cpu", PS, 21000, 40000), Item("launch", LAUNCH, 40000, 43000), Item("cpu", PS, 43000, 50000)))},
         {IDENTITY: {P: 50000}, ("kernel:*=0.5",): {P: 36500}}, BACK_TO_BACK),
    Case("queue_full", queue_full, {P: StepPath(
        120000, composition(cpu=16000, launch=3000, gpu_compute=100000, sync_wait=1000),
        (Item("cpu", PS, 0, 2000), Item("launch", LAUNCH, 2000, 5000), Item("gpu_compute", "big_gemm_1", 5000, 105000),
         Item("sync_wait", LAUNCH, 105000, 106000), Item("cpu", PS, 106000, 107000),
         Item("cpu", "optimizer", 107000, 120000)))},
         {IDENTITY: {P: 120000}, ("kernel:*=0.5",): {P: 70000}}),
    Case("thread_wakeup", thread_wakeup, {P: StepPath(
        100000, composition(cpu=83000, launch=14000, sync_wait=3000),
        (Item("cpu", PS, 0, 3000), Item("launch", LAUNCH, 3000, 6000), Item("sync_wait", "pthread_cond_wait", 6000, 7000),
         Item("cpu", AUTOGRAD_CPU, 7000, 20000), Item("launch", LAUNCH, 20000, 23000),
         Item("cpu", AUTOGRAD_CPU, 23000, 50000), Item("launch", LAUNCH, 50000, 53000),
         Item("cpu", AUTOGRAD_CPU, 53000, 75000), Item("launch", LAUNCH, 75000, 80000),
         Item("sync_wait", "pthread_cond_wait", 80000, 82000), Item("cpu", PS, 82000, 83000),
         Item("cpu", "optimizer", 83000, 100000)))},
         {IDENTITY: {P: 100000}, ("api:cudaLaunchKernel*=0",): {P: 86000}, ("range:optimizer=0",): {P: 83000}}),
    Case("two_ranks", two_ranks, {
        P: StepPath(
            100000, composition(cpu=70000, launch=6000, comm_transfer=22000, sync_wait=2000),
            (Item("cpu", PS, 0, 2000, RANK1), Item("cpu", "dataloader", 2000, 49000, RANK1),
             Item("cpu", PS, 49000, 50000, RANK1), Item("launch", LAUNCH, 50000, 53000, RANK1),
             Item("cpu", PS, 53000, 55000, RANK1), Item("launch", LAUNCH, 55000, 58000, RANK1),
             Item("comm_transfer", NCCL_ALLREDUCE, 58000, 80000), Item("sync_wait", "cudaDeviceSynchronize", 80000, 82000),
             Item("cpu", PS, 82000, 83000), Item("cpu", "optimizer", 83000, 100000))),
        RANK1: StepPath(
            100000, composition(cpu=71000, launch=6000, comm_transfer=22000, sync_wait=1000),
            (Item("cpu", PS, 0, 2000, RANK1), Item("cpu", "dataloader", 2000, 49000, RANK1),
             Item("cpu", PS, 49000, 50000, RANK1), Item("launch", LAUNCH, 50000, 53000, RANK1),
             Item("cpu", PS, 53000, 55000, RANK1), Item("launch", LAUNCH, 55000, 58000, RANK1),
             Item("comm_transfer", NCCL_ALLREDUCE, 58000, 80000, RANK1),
             Item("sync_wait", "cudaDeviceSynchronize", 80000, 81000, RANK1), Item("cpu", PS, 81000, 82000, RANK1),
             Item("cpu", "optimizer", 82000, 100000, RANK1)))},
         {IDENTITY: {P: 100000, RANK1: 100000}, ("range:dataloader=0",): {P: 55000, RANK1: 55000},
          ("wait:*=0",): {P: 55000, RANK1: 100000}}),
)}


def main(argv: list[str] | None = None) -> int:
    return ms.write_cases({name: case.build for name, case in CASES.items()},
                          "Write the synthetic exports with a known critical path.", argv)


if __name__ == "__main__":
    sys.exit(main())
