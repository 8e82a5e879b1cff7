"""Records small PyTorch profiler traces (CPU only) for oxprof's test fixtures.

    python scripts/gen/torch-traces.py OUTDIR

Writes OUTDIR/<run>/<worker>.<timestamp>.pt.trace.json.gz with torch.profiler's
tensorboard_trace_handler (the layout torch-tb-profiler reads):
  * train/: an MLP training loop over a DataLoader with 2 worker processes, profiled with
    schedule(wait=1, warmup=1, active=2), record_shapes, profile_memory, with_stack;
  * ddp/: a 2-process DistributedDataParallel run on gloo, one trace per rank
    (worker names rank0, rank1), schedule(wait=1, warmup=1, active=2).
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
from torch.utils.data import DataLoader, TensorDataset

STEPS = 4  # wait 1 + warmup 1 + active 2


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))


def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 64, generator=g)
    y = torch.randint(0, 10, (256,), generator=g)
    return TensorDataset(x, y)


def train(out):
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    loader = DataLoader(data(), batch_size=32, num_workers=2, shuffle=True)
    prof = profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
        on_trace_ready=tensorboard_trace_handler(os.path.join(out, "train"), worker_name="worker0", use_gzip=True),
        record_shapes=True,
        profile_memory=True,
        with_stack=True,
    )
    with prof:
        for step, (x, y) in enumerate(loader):
            if step >= STEPS:
                break
            loss = torch.nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()


def ddp_rank(rank, world, out, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    net = torch.nn.parallel.DistributedDataParallel(model())
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    ds = data()
    sampler = torch.utils.data.distributed.DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False)
    loader = DataLoader(ds, batch_size=32, sampler=sampler)
    prof = profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
        on_trace_ready=tensorboard_trace_handler(os.path.join(out, "ddp"), worker_name=f"rank{rank}", use_gzip=True),
        record_shapes=True,
    )
    with prof:
        for step, (x, y) in enumerate(loader):
            if step >= STEPS:
                break
            loss = torch.nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
    dist.destroy_process_group()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    train(out)
    port = 29500 + os.getpid() % 1000
    mp.spawn(ddp_rank, args=(2, out, port), nprocs=2, join=True)
    print("torch", torch.__version__)


if __name__ == "__main__":
    main()
