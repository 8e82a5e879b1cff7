"""A small TensorFlow (Keras) training loop with the profiler server on, for
scripts/live/tf-capture-check.sh.

    python scripts/live/tf-train-server.py --port 6009 [--seconds 120]

Starts `tf.profiler.experimental.server.start(PORT)`, builds the step, prints
`READY port=PORT`, then trains on CPU until --seconds pass or stdin closes. Each step is
a `tf.profiler.experimental.Trace("train", step_num=i, _r=1)`.
"""
import argparse
import os
import sys
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--port", type=int, required=True)
  parser.add_argument("--seconds", type=float, default=120.0)
  args = parser.parse_args()

  stop = threading.Event()

  def watch_stdin():
    try:
      sys.stdin.read()
    finally:
      stop.set()

  threading.Thread(target=watch_stdin, daemon=True).start()

  tf.random.set_seed(0)
  tf.profiler.experimental.server.start(args.port)
  rng = np.random.default_rng(0)
  ds = (tf.data.Dataset.from_tensor_slices(
      (rng.standard_normal((2048, 64)).astype(np.float32),
       rng.integers(0, 10, 2048))).map(lambda x, y: (x * 2.0, y))
        .batch(32).prefetch(2).repeat())
  model = tf.keras.Sequential([tf.keras.Input((64,)),
                               tf.keras.layers.Dense(128, activation="relu"),
                               tf.keras.layers.Dense(10)])
  opt = tf.keras.optimizers.SGD(0.01)
  lossf = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

  @tf.function
  def train_step(x, y):
    with tf.GradientTape() as tape:
      loss = lossf(y, model(x, training=True))
    opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                            model.trainable_variables))
    return loss

  it = iter(ds)
  loss = train_step(*next(it))  # trace the function before saying READY
  print(f"READY port={args.port}", flush=True)
  deadline = time.time() + args.seconds
  step = 0
  while time.time() < deadline and not stop.is_set():
    with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
      loss = train_step(*next(it))
    step += 1
    time.sleep(0.002)
  print(f"DONE steps={step} loss={float(loss):.6f}", flush=True)
  sys.stdout.flush()
  os._exit(0)  # TF's profiler server does not shut down cleanly


if __name__ == "__main__":
  main()
