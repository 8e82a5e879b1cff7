#!/usr/bin/env bash
# Other engines read `oxprof export --to parquet` unchanged, and the Spark pod script
# agrees with `oxprof query`:
#  1. DuckDB (Python package) and Spark SQL (pyspark, local[2]; Java 17 from Debian's
#     openjdk-17-jre-headless) answer every query of testdata/sql/reader-queries.sql over the
#     exported committed fixtures exactly as `oxprof query` does over the profiles;
#  2. scripts/spark/oxprof_spark.py on a generated 16-host run (copies of a real JAX host
#     under 16 names), 2 executors in local mode: its ALL_HOSTS step table, per-host
#     breakdown and stragglers equal `oxprof query`'s.
# The venv is cached in ~/.cache/oxprof-sql-venv.
#   OXPROF_BIN=path   the oxprof binary (default: cargo build -p oxprof, debug)
#   SKIP_SPARK=1      DuckDB only
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
step() { printf '\n=== %s (%s)\n' "$*" "$(date +%H:%M:%S)"; }

venv="$HOME/.cache/oxprof-sql-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import duckdb, pyspark' 2>/dev/null; then
  step "sql readers: venv with duckdb and pyspark ($venv)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'duckdb>=1,<3' 'pyspark==3.5.*'
fi
if [ "${SKIP_SPARK:-0}" != "1" ] && ! command -v java >/dev/null; then
  step "sql readers: Java for Spark (Debian openjdk-17-jre-headless)"
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  $sudo_ apt-get update -qq && $sudo_ apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

if [ -z "${OXPROF_BIN:-}" ]; then
  step "sql readers: build oxprof"
  cargo build -p oxprof --locked
  target_dir=$(cargo metadata --format-version 1 --no-deps | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  OXPROF_BIN="$target_dir/debug/oxprof"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Spark's local mode binds (and its driver advertises) the loopback address only, not the
# interface address the machine's hostname resolves to.
export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=127.0.0.1

engines="duckdb"
[ "${SKIP_SPARK:-0}" = "1" ] || engines="duckdb spark"
for fixture in testdata/profiles/jax_train testdata/profiles/tf_custom_loop testdata/kineto/ddp; do
  name=$(basename "$fixture")
  step "sql readers: export $fixture"
  "$OXPROF_BIN" export "$fixture" --to parquet "$work/$name"
  for engine in $engines; do
    "$venv/bin/python" scripts/ci/check-sql-readers.py --engine "$engine" --oxprof "$OXPROF_BIN" --profiles "$fixture" --dataset "$work/$name"
  done
done

if [ "${SKIP_SPARK:-0}" != "1" ]; then
  step "spark: 16-host run, 2 executors in local mode"
  host=$(find testdata/profiles/jax_train -name '*.xplane.pb.gz' | head -1)
  run="$work/pod/plugins/profile/2026_01_01_00_00_00"
  mkdir -p "$run"
  for i in $(seq -w 0 15); do cp "$host" "$run/host$i.xplane.pb.gz"; done
  PYSPARK_PYTHON="$venv/bin/python" "$venv/bin/python" scripts/spark/oxprof_spark.py "$run" "$work/pod-dataset" \
    --oxprof "$OXPROF_BIN" --master 'local[2]'
  "$venv/bin/python" scripts/spark/compare-with-oxprof.py --oxprof "$OXPROF_BIN" --run "$run" --results "$work/pod-dataset/_results"
fi
step "sql readers: all answers equal"
