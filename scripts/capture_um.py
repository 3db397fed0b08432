"""Unified-memory traffic with CPU and GPU page faults, in NVTX ranges: the program of fixture `um-faults` (scripts/capture_um.sh)."""
import ctypes
import glob
import os

import torch

MB = 1 << 20
SIZE = 8 * MB
ITERS = 4

torch.cuda.init()
torch.zeros(1, device="cuda")  # context
def cudart():
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    base = os.path.dirname(torch.__file__)
    for pat in ("../nvidia/*/lib/libcudart.so*", "lib/libcudart*.so*"):
        for p in sorted(glob.glob(os.path.join(base, pat))):
            return ctypes.CDLL(p)
    raise OSError("no libcudart")
rt = cudart()
print("cudart", rt._name, flush=True)

class Managed:
    def __init__(self, ptr, n):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (n,), "typestr": "<f4", "version": 3, "strides": None}

nvtx = torch.cuda.nvtx
nvtx.range_push("alloc")
p = ctypes.c_void_p()
rc = rt.cudaMallocManaged(ctypes.byref(p), ctypes.c_size_t(SIZE), ctypes.c_uint(1))  # cudaMemAttachGlobal
assert rc == 0, rc
q = ctypes.c_void_p()
rc = rt.cudaMallocManaged(ctypes.byref(q), ctypes.c_size_t(2 * MB), ctypes.c_uint(1))
assert rc == 0, rc
nvtx.range_pop()
try:
    t = torch.as_tensor(Managed(p.value, SIZE // 4), device="cuda")
    print("tensor", t.device, t.data_ptr() == p.value, flush=True)
except Exception as e:
    print("tensor failed", e, flush=True)
    t = None
total = 0.0
for i in range(ITERS):
    nvtx.range_push(f"iter_{i}")
    nvtx.range_push("cpu_write")
    ctypes.memset(p, i + 1, SIZE)          # CPU faults (pages back from the GPU after the first pass)
    nvtx.range_pop()
    nvtx.range_push("gpu_kernel")
    if t is not None:
        t.mul_(2.0).add_(1.0)              # GPU faults, HtoD migration
    else:
        assert rt.cudaMemset(p, ctypes.c_int(7), ctypes.c_size_t(SIZE)) == 0
    torch.cuda.synchronize()
    nvtx.range_pop()
    nvtx.range_push("gpu_memset")
    assert rt.cudaMemset(q, ctypes.c_int(i), ctypes.c_size_t(2 * MB)) == 0
    assert rt.cudaDeviceSynchronize() == 0
    nvtx.range_pop()
    nvtx.range_push("cpu_read")
    b = ctypes.string_at(p, SIZE)          # CPU read faults, DtoH migration
    c = ctypes.string_at(q, 2 * MB)
    total += b[0] + b[-1] + c[0]
    nvtx.range_pop()
    nvtx.range_pop()
rt.cudaFree(q)
rt.cudaFree(p)
print("done", total, flush=True)
