"""Two MPI ranks (mpi4py) trading messages around a little CUDA work, in NVTX ranges: the program of fixture
`mpi-2rank` (scripts/capture_mpi.sh, under `mpirun -np 2`).

Each of STEPS steps (range `step_N`) runs, on both ranks: `compute` (a few matmuls on the GPU, the result copied
to the host), `p2p_blocking` (Send/Recv, Ssend/Recv, Sendrecv with sizes that differ by direction, a pickled
send/recv), `p2p_nonblocking` (Isend/Irecv with Waitall, Irecv with Test and Wait), `persistent` (Send_init and
Recv_init made once, Startall/Waitall, then Start/Wait each), `collectives` (Allreduce, Bcast from root 1,
Barrier, Reduce to root 0, Allgather, Gather to root 1, Scatter from root 0, Alltoall, Reduce_scatter_block,
Iallreduce and Ibarrier with Wait) and `other` (Comm_dup/Free, Comm_split/Free, Iprobe). Every buffer size is
fixed, so message sizes are the same in each capture; only the times vary.
"""
import numpy as np
import torch
from mpi4py import MPI

STEPS = 3

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
assert size == 2, f"run with mpirun -np 2, not {size}"
peer = 1 - rank
device = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")  # cpu: a smoke test
nvtx = torch.cuda.nvtx if torch.cuda.is_available() else type("NoNvtx", (), {"range_push": staticmethod(lambda name: None),
                                                                            "range_pop": staticmethod(lambda: None)})


def buffer(floats: int, fill: float) -> np.ndarray:
    return np.full(floats, fill, dtype=np.float32)


def compute() -> np.ndarray:
    a = torch.full((256, 256), 0.01 * (rank + 1), device=device)
    for _ in range(4):
        a = torch.tanh(a @ a)
    return a[0].cpu().numpy()                              # 256 floats (1 KiB), copied from the GPU


# persistent requests, made once (MPI_Send_init / MPI_Recv_init) and started every step
persist_out, persist_in = buffer(512, rank), buffer(512, -1)   # 2 KiB each way
persistent = [comm.Send_init(persist_out, dest=peer, tag=40), comm.Recv_init(persist_in, source=peer, tag=40)]

torch.zeros(1, device=device)  # CUDA context before the first step
comm.Barrier()
for step in range(STEPS):
    nvtx.range_push(f"step_{step}")

    nvtx.range_push("compute")
    result = compute()                                  # 256 floats from the GPU (1 KiB)
    nvtx.range_pop()

    nvtx.range_push("p2p_blocking")
    big_out, big_in = buffer(4096, step), buffer(4096, 0)  # 16 KiB
    if rank == 0:
        comm.Send(big_out, dest=peer, tag=11)
        comm.Recv(big_in, source=peer, tag=12)
        comm.Ssend(result, dest=peer, tag=13)
    else:
        comm.Recv(big_in, source=peer, tag=11)
        comm.Send(big_out, dest=peer, tag=12)
        comm.Recv(buffer(256, 0), source=peer, tag=13)
    # Sendrecv: rank 0 sends 1 KiB and receives 2 KiB, rank 1 the other way round (tags differ by direction)
    out_floats, in_floats = (256, 512) if rank == 0 else (512, 256)
    comm.Sendrecv(buffer(out_floats, rank), dest=peer, sendtag=20 + rank,
                  recvbuf=buffer(in_floats, 0), source=peer, recvtag=20 + peer)
    if rank == 0:
        comm.send({"step": step, "loss": float(result[0])}, dest=peer, tag=30)  # pickled
    else:
        comm.recv(source=peer, tag=30)
    nvtx.range_pop()

    nvtx.range_push("p2p_nonblocking")
    small_out, small_in = buffer(1024, rank), buffer(1024, 0)  # 4 KiB
    requests = [comm.Isend(small_out, dest=peer, tag=50), comm.Irecv(small_in, source=peer, tag=50)]
    MPI.Request.Waitall(requests)
    late_out, late_in = buffer(2048, rank), buffer(2048, 0)  # 8 KiB
    request = comm.Irecv(late_in, source=peer, tag=51)
    comm.Send(late_out, dest=peer, tag=51)
    request.Test()
    request.Wait()
    nvtx.range_pop()

    nvtx.range_push("persistent")
    MPI.Prequest.Startall(persistent)
    MPI.Request.Waitall(persistent)
    for req in persistent:
        req.Start()
    for req in persistent:
        req.Wait()
    nvtx.range_pop()

    nvtx.range_push("collectives")
    summed = np.empty_like(result)
    comm.Allreduce(result, summed, op=MPI.SUM)           # 1 KiB each way
    shared = buffer(2048, rank)                          # 8 KiB from root 1
    comm.Bcast(shared, root=1)
    comm.Barrier()
    reduced = np.empty(512, dtype=np.float32) if rank == 0 else None
    comm.Reduce(buffer(512, rank), reduced, op=MPI.SUM, root=0)
    gathered_all = np.empty(2 * 128, dtype=np.float32)
    comm.Allgather(buffer(128, rank), gathered_all)
    gathered = np.empty(2 * 64, dtype=np.float32) if rank == 1 else None
    comm.Gather(buffer(64, rank), gathered, root=1)
    scattered = np.empty(96, dtype=np.float32)
    comm.Scatter(buffer(2 * 96, step) if rank == 0 else None, scattered, root=0)
    exchanged = np.empty(2 * 32, dtype=np.float32)
    comm.Alltoall(buffer(2 * 32, rank), exchanged)
    part = np.empty(160, dtype=np.float32)
    comm.Reduce_scatter_block(buffer(2 * 160, rank), part, op=MPI.SUM)
    peak_out, peak = buffer(768, rank), np.empty(768, dtype=np.float32)  # kept alive until Wait
    request = comm.Iallreduce(peak_out, peak, op=MPI.MAX)
    request.Wait()
    comm.Ibarrier().Wait()
    nvtx.range_pop()

    nvtx.range_push("other")
    dup = comm.Dup()
    dup.Free()
    half = comm.Split(color=rank, key=0)
    half.Free()
    comm.Iprobe(source=peer, tag=99)
    nvtx.range_pop()

    nvtx.range_pop()

for req in persistent:
    req.Free()
if device.type == "cuda":
    torch.cuda.synchronize()
comm.Barrier()
print(f"rank {rank}: done {STEPS} steps; result[0] {float(result[0]):.6f}, shared[0] {float(shared[0])}", flush=True)
