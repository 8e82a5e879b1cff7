#!/usr/bin/env python3
"""Records the JAX (XSpace) cases of `oxprof explain`'s evaluation set: real profiles of
small jitted programs with one planted problem each, under testdata/explain/<case>/ (a log
directory: plugins/profile/run/vm.xplane.pb.gz). testdata/explain/cases.json names each
case's expected first finding (written by scripts/gen/explain-evalset.py, whose
XSPACE_CASES lists these); crates/oxprof-explain/tests/evalset.rs checks them.

    bash scripts/ci/setup-python.sh                    # .venv-test with JAX (CPU)
    .venv-test/bin/python scripts/gen/explain-jax-cases.py          # every case
    .venv-test/bin/python scripts/gen/explain-jax-cases.py jax_converts

Unlike explain-evalset.py this script is NOT run with --check: a real profile has new
timestamps, thread ids and durations on every run, so regenerating changes the bytes (the
planted problem stays). Each case runs in a process of its own, since XLA_FLAGS is read
once per process:

| case | XLA_FLAGS | planted |
|---|---|---|
| jax_unfused | --xla_disable_hlo_passes=fusion | top-level dynamic-update-slices and reshapes (a cache written slice by slice) |
| jax_layout_copies | --xla_disable_hlo_passes=fusion | standalone transposes of large matrices (layout changes) |
| jax_converts | --xla_disable_hlo_passes=fusion --xla_cpu_experimental_ynn_fusion_type= (no YNNPACK fusions either) | f32 -> bf16 -> f32 round trips as standalone converts |
| jax_recompile | (none) | the input's shape changes every step: the step compiles each time |

JAX 0.10.2 (CPU, jaxlib from PyPI), 10 steps of jax.profiler.StepTraceAnnotation('train')
under jax.profiler.trace (python_tracer_level=0); the host is renamed `vm` and the run `run`, and only the
.xplane.pb is kept (gzip-compressed, mtime 0).
"""

import glob
import gzip
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "testdata", "explain")
STEPS = 10

CASES = {
    "jax_unfused": "--xla_disable_hlo_passes=fusion",
    "jax_layout_copies": "--xla_disable_hlo_passes=fusion",
    "jax_converts": "--xla_disable_hlo_passes=fusion --xla_cpu_experimental_ynn_fusion_type=",
    "jax_recompile": "",
}


def program(case):
    """The jitted step of `case` and a function giving step i's inputs."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    if case == "jax_unfused":
        # A cache written slice by slice (a KV cache's update), each slice reshaped into it.
        def step(cache, *rows):
            for k, row in enumerate(rows):
                cache = lax.dynamic_update_slice(cache, row.reshape(1, 512, 512), (k, 0, 0))
            return cache

        step = jax.jit(step, donate_argnums=0)
        state = {"cache": jnp.zeros((64, 512, 512), jnp.float32)}
        rows = [jnp.full((512 * 512,), float(k), jnp.float32) for k in range(64)]

        def run(*args):
            state["cache"] = step(*args)
            return state["cache"]

        return run, lambda i: (state["cache"], *rows)
    if case == "jax_layout_copies":
        # Layout changes between the matmuls: each transpose is a copy of the matrix.
        @jax.jit
        def step(a, w):
            for _ in range(6):
                a = jnp.transpose(a, (1, 0)) + 1.0
                a = jnp.swapaxes(a.reshape(64, 32, 1024), 0, 1).reshape(2048, 1024).T
            return (a[:256] @ w).sum()

        a = jnp.ones((1024, 2048), jnp.float32)
        w = jnp.ones((2048, 64), jnp.float32)
        return step, lambda i: (a, w)
    if case == "jax_converts":
        # Mixed precision done twice over: each value goes to bf16 and back.
        @jax.jit
        def step(x):
            for k in range(8):
                x = x.astype(jnp.bfloat16).astype(jnp.float32) * (1.0 + k)
            return x.sum()

        x = jnp.ones((2048, 2048), jnp.float32)
        return step, lambda i: (x,)
    if case == "jax_recompile":
        # The batch grows by one row every step: a new shape, a new compilation.
        @jax.jit
        def step(x, w):
            h = jnp.tanh(x @ w)
            return (h @ w.T).sum()

        w = np.full((256, 256), 0.01, np.float32)
        # NumPy inputs: only the step compiles, not the array's creation.
        return step, lambda i: (np.ones((64 + i, 256), np.float32), w)
    raise SystemExit(f"no case {case}")


def record(case, logdir):
    import jax

    step, inputs = program(case)
    if case != "jax_recompile":
        step(*inputs(0)).block_until_ready()  # compile before the trace
    options = jax.profiler.ProfileOptions()
    # No Python tracer: its events would make the profiles large, and say nothing here.
    options.python_tracer_level = 0
    with jax.profiler.trace(logdir, profiler_options=options):
        for i in range(STEPS):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                step(*inputs(i)).block_until_ready()


def keep(case, logdir):
    """Moves the recorded XSpace to testdata/explain/<case>/plugins/profile/run/vm.xplane.pb.gz."""
    found = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
    if len(found) != 1:
        raise SystemExit(f"{case}: expected one .xplane.pb, found {found}")
    dest_dir = os.path.join(OUT, case, "plugins", "profile", "run")
    shutil.rmtree(os.path.join(OUT, case), ignore_errors=True)
    os.makedirs(dest_dir)
    dest = os.path.join(dest_dir, "vm.xplane.pb.gz")
    with open(found[0], "rb") as f, open(dest, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as out:
            out.write(f.read())
    print(f"{case}: {os.path.getsize(dest)} bytes -> {os.path.relpath(dest, ROOT)}")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--record":
        case = sys.argv[2]
        with tempfile.TemporaryDirectory() as logdir:
            record(case, logdir)
            keep(case, logdir)
        return 0
    for case in sys.argv[1:] or list(CASES):
        env = dict(os.environ, XLA_FLAGS=CASES[case], JAX_PLATFORMS="cpu")
        subprocess.run([sys.executable, __file__, "--record", case], env=env, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
