#!/usr/bin/env python3
"""Pod-scale profiles on Apache Spark: each executor runs `oxprof export` on one host file
(the binary shipped with the job), the per-host Parquet parts are gathered into one
Hive-partitioned dataset, and Spark SQL computes the ALL_HOSTS step table, the per-host
step-time breakdown and the stragglers -- the same SQL `oxprof query` answers on one
machine (see QUERIES; docs/sql/ documents the tables).

  spark-submit --files /path/to/oxprof scripts/spark/oxprof_spark.py RUN_DIR OUT_DIR
  python3 scripts/spark/oxprof_spark.py RUN_DIR OUT_DIR --oxprof target/release/oxprof   (local[2])

RUN_DIR holds one profile file per host (`HOST.xplane.pb[.gz]`, `*.pt.trace.json[.gz]`);
OUT_DIR must not exist (or be empty). Results are printed and written as CSV under
OUT_DIR/_results/. OUT_DIR must be a file system every executor sees (local mode, NFS).
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time

PROFILE_SUFFIXES = (".xplane.pb", ".xplane.pb.gz", ".pt.trace.json", ".pt.trace.json.gz", ".json", ".json.gz")

# name -> SQL over the dataset's tables (Spark SQL, DataFusion and DuckDB alike).
QUERIES = {
    "all_hosts_steps": (
        "SELECT step_num, count(*) AS hosts, max(step_time_ms) AS max_step_time_ms, "
        "avg(step_time_ms) AS mean_step_time_ms, min(step_time_ms) AS min_step_time_ms "
        "FROM steps GROUP BY step_num ORDER BY step_num"
    ),
    "per_host_breakdown": (
        "SELECT host, count(*) AS steps, avg(step_time_ms) AS step_time_ms, avg(host_compute_time_ms) AS host_compute_ms, "
        "avg(device_compute_time_ms) AS device_compute_ms, avg(infeed_time_ms) AS input_ms, avg(other_time_ms) AS all_others_ms "
        "FROM steps GROUP BY host ORDER BY host"
    ),
    "stragglers": (
        "SELECT s.host, count(*) AS slow_steps, max(s.step_time_ms / m.median_ms) AS worst_ratio "
        "FROM steps s JOIN (SELECT step_num, median(step_time_ms) AS median_ms FROM steps "
        "GROUP BY step_num) m ON s.step_num = m.step_num "
        "WHERE s.step_time_ms > 1.1 * m.median_ms GROUP BY s.host ORDER BY slow_steps DESC, s.host"
    ),
}


def host_files(run_dir):
    files = sorted(
        os.path.join(run_dir, f) for f in os.listdir(run_dir) if f.endswith(PROFILE_SUFFIXES) and not f.startswith(".")
    )
    if not files:
        sys.exit(f"{run_dir}: no profile files (HOST.xplane.pb, *.pt.trace.json)")
    return files


def export_one(args):
    """On an executor: export one host file, then move its parts into the dataset."""
    path, out_dir, oxprof = args
    from pyspark import SparkFiles  # noqa: F401 (imported on executors)

    binary = oxprof if os.path.isabs(oxprof) and os.path.exists(oxprof) else SparkFiles.get(os.path.basename(oxprof))
    staging = tempfile.mkdtemp(prefix="oxprof-export-")
    started = time.time()
    try:
        part = os.path.join(staging, "dataset")
        done = subprocess.run([binary, "export", path, "--to", "parquet", part], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"oxprof export {path}: {done.stderr.strip()}")
        moved = 0
        for table in os.listdir(part):
            for root, _, names in os.walk(os.path.join(part, table)):
                rel = os.path.relpath(root, part)
                if rel == table:  # runs/, hosts/: one file per host, named after it
                    for n in names:
                        dest = os.path.join(out_dir, table)
                        os.makedirs(dest, exist_ok=True)
                        shutil.move(os.path.join(root, n), os.path.join(dest, f"part-{os.path.basename(path)}.parquet"))
                        moved += 1
                    continue
                for n in names:
                    dest = os.path.join(out_dir, rel)
                    os.makedirs(dest, exist_ok=True)
                    shutil.move(os.path.join(root, n), os.path.join(dest, n))
                    moved += 1
        return (os.path.basename(path), moved, time.time() - started)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def spark_session(master):
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.appName("oxprof-pod")
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .config("spark.ui.enabled", "false")
    )
    if master:
        builder = builder.master(master)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def register_tables(spark, out_dir):
    for table in sorted(os.listdir(out_dir)):
        if table.startswith("_"):
            continue
        spark.read.option("basePath", os.path.join(out_dir, table)).parquet(os.path.join(out_dir, table)).createOrReplaceTempView(table)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir")
    p.add_argument("out_dir")
    p.add_argument("--oxprof", default="oxprof", help="the oxprof binary (a path, or its name in --files)")
    p.add_argument("--master", default=None, help="Spark master (default: spark-submit's, else local[2])")
    a = p.parse_args()
    run_dir, out_dir = os.path.abspath(a.run_dir), os.path.abspath(a.out_dir)
    if os.path.exists(out_dir) and os.listdir(out_dir):
        sys.exit(f"{out_dir}: not empty")
    os.makedirs(out_dir, exist_ok=True)
    oxprof = os.path.abspath(a.oxprof) if os.path.exists(a.oxprof) else (shutil.which(a.oxprof) or a.oxprof)
    master = a.master or (None if "SPARK_ENV_LOADED" in os.environ or "spark.master" in os.environ.get("PYSPARK_SUBMIT_ARGS", "") else "local[2]")
    spark = spark_session(master)
    files = host_files(run_dir)

    started = time.time()
    exported = spark.sparkContext.parallelize([(f, out_dir, oxprof) for f in files], len(files)).map(export_one).collect()
    export_s = time.time() - started
    print(f"export: {len(exported)} hosts in {export_s:.2f} s (per host {min(e[2] for e in exported):.2f}-{max(e[2] for e in exported):.2f} s)")

    started = time.time()
    register_tables(spark, out_dir)
    results_dir = os.path.join(out_dir, "_results")
    os.makedirs(results_dir, exist_ok=True)
    for name, sql in QUERIES.items():
        df = spark.sql(sql)
        rows = df.collect()
        with open(os.path.join(results_dir, f"{name}.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(df.columns)
            w.writerows([list(r) for r in rows])
        print(f"{name}: {len(rows)} rows")
        for r in rows[:5]:
            print("  ", list(r))
    print(f"queries: {time.time() - started:.2f} s")
    spark.stop()


if __name__ == "__main__":
    main()
