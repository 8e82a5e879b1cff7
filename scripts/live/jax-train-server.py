"""A small JAX training loop with the profiler server on, for oxprof's live-capture tests.

    python scripts/live/jax-train-server.py --port 9999 [--seconds 60] [--step-ms 0] [--name train] [--idle]

Starts `jax.profiler.start_server(PORT)`, compiles the step, prints
`READY port=PORT` on stdout, then trains (CPU) until --seconds pass or stdin closes
(so the server dies with the test that started it). Each step is a
`jax.profiler.StepTraceAnnotation(NAME, step_num=i)`; --step-ms keeps each step
computing (more jitted calls inside the same annotation) until that many milliseconds
have passed, to make steps longer than a short capture. --idle runs no step after READY
(the profiler server then records nothing: an empty trace).
"""
import argparse
import os
import sys
import threading
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--port", type=int, required=True)
  parser.add_argument("--seconds", type=float, default=120.0)
  parser.add_argument("--step-ms", type=float, default=0.0)
  parser.add_argument("--name", default="train")
  parser.add_argument("--idle", action="store_true")
  args = parser.parse_args()

  stop = threading.Event()

  def watch_stdin():
    # The test holds our stdin open; EOF means it is gone.
    try:
      sys.stdin.read()
    finally:
      stop.set()

  threading.Thread(target=watch_stdin, daemon=True).start()

  jax.profiler.start_server(args.port)
  key = jax.random.PRNGKey(0)
  k1, k2, k3 = jax.random.split(key, 3)
  params = {"w1": jax.random.normal(k1, (128, 256)) * 0.05,
            "w2": jax.random.normal(k2, (256, 10)) * 0.05}
  x = jax.random.normal(k3, (64, 128))

  @jax.jit
  def step(p, x):
    def loss(p):
      return jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"]) ** 2)
    value, grads = jax.value_and_grad(loss)(p)
    return jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads), value

  params, value = step(params, x)  # compile before saying READY
  value.block_until_ready()
  print(f"READY port={args.port}", flush=True)

  deadline = time.time() + args.seconds
  i = 0
  while args.idle and time.time() < deadline and not stop.is_set():
    stop.wait(0.1)
  while time.time() < deadline and not stop.is_set():
    with jax.profiler.StepTraceAnnotation(args.name, step_num=i):
      step_end = time.time() + args.step_ms / 1000.0
      params, value = step(params, x)
      value.block_until_ready()
      while time.time() < step_end:
        params, value = step(params, x)
        value.block_until_ready()
    i += 1
    time.sleep(0.002)
  print(f"DONE steps={i} loss={float(value):.6f}", flush=True)
  jax.profiler.stop_server()


if __name__ == "__main__":
  main()
