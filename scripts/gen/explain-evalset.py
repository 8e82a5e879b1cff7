#!/usr/bin/env python3
"""Writes oxprof explain's evaluation set: small PyTorch profiler (Kineto) traces, each
with one planted bottleneck or none, under testdata/explain/ (one run directory per case)
and testdata/explain/cases.json (each case's expected first finding, `null` for a healthy
run). crates/oxprof-explain/tests/evalset.rs checks that `oxprof explain` names the planted
cause first on every case and raises no warning on the healthy ones; the XSpace cases of
the set are committed profiles (testdata/profiles), listed in cases.json too.

The traces are synthetic but shaped as torch.profiler writes them (ProfilerStep# spans,
cpu_op operators with their CUDA runtime calls, kernels on a stream correlated with their
launches, NCCL kernels, [memory] instants, deviceProperties), so the whole importer and
torch-tb-profiler's step breakdown run on them.

    python3 scripts/gen/explain-evalset.py          # rewrite testdata/explain
    python3 scripts/gen/explain-evalset.py --check  # exit 1 when the files differ
"""

import json
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "testdata", "explain")

A100 = {
    "id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42505273344, "computeMajor": 8,
    "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
    "sharedMemPerMultiprocessor": 167936, "numSms": 108, "sharedMemPerBlockOptin": 166912,
}
PID, TID, STREAM = 4242, 4242, 7
SGEMM = "ampere_sgemm_128x64_nn"
TC_GEMM = "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn"
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"


class Trace:
    """Builds one rank's events on a host timeline and a GPU stream timeline (µs)."""

    def __init__(self):
        self.events = []
        self.host = 1_000_000.0
        self.gpu = 0.0
        self.corr = 0
        self.ext = 0

    def op(self, name, host_us, cat="cpu_op"):
        self.ext += 1
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID, "ts": self.host,
                            "dur": host_us, "args": {"External id": self.ext}})
        start = self.host
        self.host += host_us
        return start

    def launch(self, op, op_us, launch_us, kernel, kernel_us, cat="kernel"):
        """An operator that launches one kernel: its host time, the runtime call inside it,
        and the kernel on the stream once the launch is done and the stream is free."""
        self.ext += 1
        self.corr += 1
        start = self.host
        self.events.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": PID, "tid": TID, "ts": start,
                            "dur": op_us, "args": {"External id": self.ext}})
        at = start + (op_us - launch_us) / 2
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": PID, "tid": TID,
                            "ts": at, "dur": launch_us,
                            "args": {"correlation": self.corr, "external id": self.ext}})
        begin = max(at + launch_us, self.gpu)
        self.events.append({"ph": "X", "cat": cat, "name": kernel, "pid": 0, "tid": f"stream {STREAM}",
                            "ts": begin, "dur": kernel_us,
                            "args": {"device": 0, "context": 1, "stream": STREAM, "correlation": self.corr,
                                     "external id": self.ext, "registers per thread": 64, "shared memory": 0,
                                     "blocks per SM": 2.0, "warps per SM": 16.0, "grid": [216, 1, 1],
                                     "block": [256, 1, 1], "est. achieved occupancy %": 50}})
        self.events.append({"ph": "s", "id": self.corr, "pid": PID, "tid": TID, "ts": at, "cat": "ac2g",
                            "name": "ac2g"})
        self.events.append({"ph": "f", "id": self.corr, "pid": 0, "tid": f"stream {STREAM}", "ts": begin,
                            "cat": "ac2g", "name": "ac2g", "bp": "e"})
        self.gpu = begin + kernel_us
        self.host = start + op_us

    def sync(self):
        """`aten::item`: copies a value back, waiting for every queued kernel."""
        wait = max(self.gpu - self.host, 0.0) + 30
        start = self.host
        self.ext += 1
        self.events.append({"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": PID, "tid": TID, "ts": start,
                            "dur": wait + 10, "args": {"External id": self.ext}})
        self.events.append({"ph": "X", "cat": "cpu_op", "name": "aten::_local_scalar_dense", "pid": PID,
                            "tid": TID, "ts": start + 2, "dur": wait + 6, "args": {"External id": self.ext + 1}})
        self.ext += 1
        self.corr += 1
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": PID, "tid": TID,
                            "ts": start + 4, "dur": wait, "args": {"correlation": self.corr, "external id": self.ext}})
        begin = max(self.gpu, start + 4)
        self.events.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": 0,
                            "tid": f"stream {STREAM}", "ts": begin, "dur": 2,
                            "args": {"device": 0, "context": 1, "stream": STREAM, "correlation": self.corr,
                                     "external id": self.ext, "bytes": 4}})
        self.gpu = begin + 2
        self.host = start + wait + 10

    def memory(self, total_allocated, total_reserved):
        self.events.append({"ph": "i", "s": "t", "name": "[memory]", "pid": PID, "tid": TID, "ts": self.host,
                            "args": {"Device Type": 1, "Device Id": 0, "Addr": 1 << 40, "Bytes": 1 << 20,
                                     "Total Allocated": total_allocated, "Total Reserved": total_reserved}})
        self.host += 1

    def step(self, number, body):
        """One ProfilerStep#: `body(self)` fills it; the step ends when host and GPU are done."""
        start = self.host
        body(self)
        end = max(self.host, self.gpu) + 5
        self.host = end
        self.events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{number}", "pid": PID,
                            "tid": TID, "ts": start, "dur": end - start, "args": {"External id": 0}})

    def document(self, rank=None):
        doc = {"schemaVersion": 1, "deviceProperties": [A100], "traceEvents": self.events,
               "baseTimeNanoseconds": 1_700_000_000_000_000_000}
        if rank is not None:
            doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 2}
        return doc


def healthy_body(kernel=SGEMM, ops=20, kernel_us=400):
    def body(t):
        for _ in range(ops):
            t.launch("aten::mm", 30, 10, kernel, kernel_us)
    return body


def steps(trace, body, n=4):
    for i in range(n):
        trace.step(i + 1, body)
    return trace


def case_healthy_gpu():
    return [steps(Trace(), healthy_body(TC_GEMM)).document()]


def case_healthy_gpu_long():
    return [steps(Trace(), healthy_body(TC_GEMM, ops=40, kernel_us=250)).document()]


def case_sync_per_step():
    def body(t):
        healthy_body(TC_GEMM)(t)
        t.sync()
    return [steps(Trace(), body).document()]


def case_dataloader_starved():
    def body(t):
        t.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 12_000)
        healthy_body(TC_GEMM)(t)
    return [steps(Trace(), body).document()]


def case_dataloader_workers_slow():
    # Kineto writes the DataLoader's fetch as a user_annotation (torch-tb-profiler 0.4.3
    # drops those); with num_workers > 0 the training process only waits in it.
    def body(t):
        t.op("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 10_000, cat="user_annotation")
        healthy_body(TC_GEMM)(t)
    return [steps(Trace(), body).document()]


def case_torch_recompile():
    # torch.compile recompiling every step: Dynamo's and Inductor's timers
    # (`… (dynamo_timed)` record_function spans, the inner one nested), then the compiled
    # region with its recompile number.
    compiled = [0]

    def body(t):
        start = t.op("_compile.compile_inner (dynamo_timed)", 8_000, cat="user_annotation")
        t.events.append({"ph": "X", "cat": "user_annotation", "name": "compile_fx_inner (dynamo_timed)", "pid": PID,
                         "tid": TID, "ts": start + 1_000, "dur": 5_000, "args": {"External id": 0}})
        t.op(f"Torch-Compiled Region: 0/{compiled[0]}", 20)
        compiled[0] += 1
        healthy_body(TC_GEMM)(t)
    return [steps(Trace(), body).document()]


def case_memory_fragmented():
    # The reserve grows to 70% of the GPU while less than half of it holds tensors.
    def body(t):
        healthy_body(TC_GEMM)(t)
        t.memory(14_000_000_000, 30_000_000_000)
    return [steps(Trace(), body).document()]


def case_launch_overhead():
    def body(t):
        for _ in range(300):
            t.launch("aten::add_", 11, 10, "void at::native::vectorized_elementwise_kernel<4>", 5)
    return [steps(Trace(), body).document()]


def case_host_bound():
    def body(t):
        for _ in range(20):
            t.op("aten::index", 350)
            t.launch("aten::mm", 40, 10, TC_GEMM, 20)
    return [steps(Trace(), body).document()]


def case_comm_bound():
    def body(t):
        healthy_body(TC_GEMM)(t)
        t.launch("nccl:all_reduce", 40, 10, NCCL, 8_000)
    return [steps(Trace(), body).document(rank=0)]


def case_ddp_straggler():
    fast = steps(Trace(), healthy_body(TC_GEMM)).document(rank=0)

    def slow_body(t):
        healthy_body(TC_GEMM)(t)
        t.op("aten::to", 12_000)
    slow = steps(Trace(), slow_body).document(rank=1)
    return [fast, slow]


def case_tensor_cores_unused():
    return [steps(Trace(), healthy_body(SGEMM)).document()]


def case_python_gaps():
    def body(t):
        healthy_body(TC_GEMM)(t)
        t.host = max(t.host, t.gpu) + 9_000  # untraced Python between steps
    return [steps(Trace(), body).document()]


def case_memory_near_capacity():
    def body(t):
        healthy_body(TC_GEMM)(t)
        t.memory(40_500_000_000, 41_900_000_000)
    return [steps(Trace(), body).document()]


CASES = {
    # name: (builder, expected first finding id or None)
    "healthy_gpu": (case_healthy_gpu, None),
    "healthy_gpu_long": (case_healthy_gpu_long, None),
    "sync_per_step": (case_sync_per_step, "sync_points"),
    "dataloader_starved": (case_dataloader_starved, "input_bound"),
    "launch_overhead": (case_launch_overhead, "launch_overhead"),
    "host_bound": (case_host_bound, "host_bound"),
    "comm_bound": (case_comm_bound, "communication"),
    "ddp_straggler": (case_ddp_straggler, "stragglers"),
    "tensor_cores_unused": (case_tensor_cores_unused, "tensor_cores_unused"),
    "python_gaps": (case_python_gaps, "idle"),
    "memory_near_capacity": (case_memory_near_capacity, "memory_near_capacity"),
    "dataloader_workers_slow": (case_dataloader_workers_slow, "input_bound"),
    "torch_recompile": (case_torch_recompile, "compilation"),
    "memory_fragmented": (case_memory_fragmented, "memory_fragmentation"),
}

# Committed XSpace profiles in the set: testdata/profiles (recorded by the refkit), and
# the real JAX profiles with planted HLO problems and recompilation that
# scripts/gen/explain-jax-cases.py records under testdata/explain/ (not byte-reproducible,
# so not rewritten here).
XSPACE_CASES = {
    "../profiles/tf_custom_loop": "input_bound",
    "../profiles/jax_train": None,
    "../profiles/tf_memory": None,
    "jax_unfused": "hlo_unfused",
    "jax_layout_copies": "hlo_layout_copies",
    "jax_converts": "hlo_converts",
    "jax_recompile": "compilation",
}


def files():
    out = {}
    for name, (build, _) in CASES.items():
        for rank, doc in enumerate(build()):
            out[os.path.join(name, f"worker{rank}.1700000000{rank:03d}.pt.trace.json")] = (
                json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n")
    expected = {name: first for name, (_, first) in CASES.items()}
    expected.update(XSPACE_CASES)
    out["cases.json"] = json.dumps(expected, indent=2, sort_keys=True) + "\n"
    return out


def main():
    check = "--check" in sys.argv[1:]
    differ = []
    for rel, text in sorted(files().items()):
        path = os.path.join(OUT, rel)
        old = open(path).read() if os.path.exists(path) else None
        if old == text:
            continue
        if check:
            differ.append(rel)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    if differ:
        print("testdata/explain differs from what scripts/gen/explain-evalset.py writes: " + ", ".join(differ))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
