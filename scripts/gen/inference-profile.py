"""One real TensorFlow inference (serving) profile for oxprof's inference tests (run by
scripts/gen/inference-profile.sh).

A small serving loop on CPU, annotated the way XProf's inference analysis reads it:

* model `mlp:1` is served with in-graph batching (`tf.nondifferentiable_batch_function`,
  TF's `BatchFunction` op): 4 client threads each send requests of 1-3 rows; TF's batch
  scheduler forms batches (`ScheduleWithoutSplit`, `ConcatInputTensors` with padding
  stats, `ProcessBatch` with `_r=2`);
* model `tiny:2` is served without batching, from the main thread;
* every request is a user-defined root `Trace("ModelServerRequest_predict", _r=1,
  model_id=...)`, the name XProf's `BuildRequestEventsMap` treats as a request.

Usage: python scripts/gen/inference-profile.py --logdir DIR [--requests N]
"""
import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("PYTHONHASHSEED", "1234")
import random
import threading

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--logdir", required=True)
parser.add_argument("--requests", type=int, default=40, help="requests per client thread")
parser.add_argument("--threads", type=int, default=4)
args = parser.parse_args()

SEED = 1234
random.seed(SEED)
np.random.seed(SEED)
import tensorflow as tf

tf.random.set_seed(SEED)
D, H = 64, 128
init = tf.keras.initializers.GlorotUniform(seed=SEED)
w1 = tf.Variable(init((D, H)))
w2 = tf.Variable(init((H, 8)))
v = tf.Variable(init((D, 4)))


@tf.nondifferentiable_batch_function(
    num_batch_threads=1, max_batch_size=8, batch_timeout_micros=3000, allowed_batch_sizes=[4, 8])
def batched_mlp(x):
  h = tf.nn.relu(tf.matmul(x, w1))
  return tf.matmul(h, w2)


@tf.function(input_signature=[tf.TensorSpec([None, D], tf.float32)])
def serve_mlp(x):
  return batched_mlp(x)


@tf.function(input_signature=[tf.TensorSpec([None, D], tf.float32)])
def serve_tiny(x):
  return tf.nn.softmax(tf.matmul(x, v))


rng = np.random.default_rng(SEED)
inputs = [rng.standard_normal((int(rng.integers(1, 4)), D)).astype(np.float32) for _ in range(64)]

# Warm up (trace both functions) outside the profile.
serve_mlp(inputs[0])
serve_tiny(inputs[0])


def client(k):
  for i in range(args.requests):
    x = inputs[(k * 7 + i) % len(inputs)]
    with tf.profiler.experimental.Trace("ModelServerRequest_predict", _r=1, model_id="mlp:1"):
      serve_mlp(x)


tf.profiler.experimental.start(args.logdir)
threads = [threading.Thread(target=client, args=(k,)) for k in range(args.threads)]
for t in threads:
  t.start()
for i in range(args.requests):
  with tf.profiler.experimental.Trace("ModelServerRequest_predict", _r=1, model_id="tiny:2"):
    serve_tiny(inputs[i % len(inputs)])
for t in threads:
  t.join()
tf.profiler.experimental.stop()
print("done")
