"""One real TensorFlow profile for `oxprof diff`'s tests (run by scripts/gen/diff-pairs.sh).

The same small MLP trained in a custom loop, in refkit style
(`tf.profiler.experimental.start/stop`, `Trace('train', step_num=s, _r=1)` around
`next(iterator)` + the step), with two switches:

  --pipeline slow   tf.data map through `tf.py_function` sleeping 0.5 ms per example,
                    `num_parallel_calls=1`, `prefetch(1)`: input-bound (like the refkit's
                    tf_custom_loop)
  --pipeline fast   the same map without the sleep, `num_parallel_calls` and `prefetch`
                    AUTOTUNE: the fixed pipeline
  --batch N         the batch size (the model and everything else unchanged)

The CPU allocator is BFC (`TF_CPU_ALLOCATOR_USE_BFC=true`, host tracer level 3), so the
profile carries allocator events for `memory_profile`.

Usage: python scripts/gen/diff-pair.py --pipeline fast --batch 32 --logdir DIR
"""
import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["TF_CPU_ALLOCATOR_USE_BFC"] = "true"
os.environ.setdefault("PYTHONHASHSEED", "1234")
import random
import time

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--pipeline", choices=["slow", "fast"], required=True)
parser.add_argument("--batch", type=int, required=True)
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--logdir", required=True)
args = parser.parse_args()

SEED = 1234
random.seed(SEED)
np.random.seed(SEED)
import tensorflow as tf

tf.random.set_seed(SEED)

N, D, NCLS = 8192, 256, 10
rng = np.random.default_rng(SEED)
x = rng.standard_normal((N, D)).astype(np.float32)
y = rng.integers(0, NCLS, size=(N,)).astype(np.int64)


def _py_sleep(v):
  time.sleep(0.0005 * args.batch)  # 0.5 ms per example, Python side
  return v


def slow_map(v, label):
  v = tf.py_function(_py_sleep, [v], tf.float32)
  v.set_shape([args.batch, D])
  return v * 0.5 + 0.1, label


def fast_map(v, label):
  return v * 0.5 + 0.1, label


# Elements are whole batches (sliced in numpy), so tf.data traces a few events per step
# rather than a few per example: the profiles stay small.
nb = N // args.batch
xs = x[: nb * args.batch].reshape(nb, args.batch, D)
ys = y[: nb * args.batch].reshape(nb, args.batch)
ds = tf.data.Dataset.from_tensor_slices((xs, ys)).shuffle(nb, seed=SEED)
if args.pipeline == "slow":
  ds = ds.map(slow_map, num_parallel_calls=1).prefetch(1)
else:
  ds = ds.map(fast_map, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
it = iter(ds.repeat())

init = tf.keras.initializers.GlorotUniform(seed=SEED)
w1 = tf.Variable(init((D, 512)))
b1 = tf.Variable(tf.zeros(512))
w2 = tf.Variable(init((512, 512)))
b2 = tf.Variable(tf.zeros(512))
w3 = tf.Variable(init((512, NCLS)))
b3 = tf.Variable(tf.zeros(NCLS))
params = [w1, b1, w2, b2, w3, b3]
opt = tf.keras.optimizers.SGD(0.01)


@tf.function
def train_step(xb, yb):
  with tf.GradientTape() as tape:
    h = tf.nn.relu(xb @ w1 + b1)
    h = tf.nn.relu(h @ w2 + b2)
    logits = h @ w3 + b3
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(yb, logits))
  grads = tape.gradient(loss, params)
  opt.apply_gradients(zip(grads, params))
  return loss


# Warm up (trace the tf.function, fill the prefetch buffer) outside the profile.
for _ in range(3):
  xb, yb = next(it)
  train_step(xb, yb)

options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=3, python_tracer_level=0, device_tracer_level=1)
tf.profiler.experimental.start(args.logdir, options=options)
for step in range(args.steps):
  with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
    xb, yb = next(it)
    loss = train_step(xb, yb)
tf.profiler.experimental.stop()
print("final loss", float(loss))
# tf.py_function + an infinite iterator can hang interpreter shutdown; exit hard.
import sys

sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
