#!/usr/bin/env python3
"""Checks that other engines read `oxprof export --to parquet` unchanged: every query of
testdata/sql/reader-queries.sql answered by DuckDB (or Spark SQL) over the dataset equals
`oxprof query`'s answer over the profiles themselves (numbers to 1e-9 relative).

  scripts/ci/check-sql-readers.py --engine duckdb|spark --oxprof BIN --profiles PATH --dataset DIR
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
QUERIES = os.path.join(HERE, "..", "..", "testdata", "sql", "reader-queries.sql")
# Tables written once (not partitioned by run= and host=).
UNPARTITIONED = {"runs", "hosts"}


def queries(path=QUERIES):
    text = open(path, encoding="utf-8").read()
    out = []
    for block in re.split(r"^-- name: ", text, flags=re.M)[1:]:
        name, _, body = block.partition("\n")
        sql = "\n".join(l for l in body.splitlines() if not l.startswith("--")).strip().rstrip(";")
        out.append((name.strip(), sql))
    return out


def oxprof_rows(binary, profiles, sql):
    done = subprocess.run([binary, "query", sql, profiles, "--format", "json"], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"oxprof query failed for {sql!r}: {done.stderr.strip()}")
    return [list(r.values()) for r in json.loads(done.stdout)]


def tables(dataset):
    return sorted(d for d in os.listdir(dataset) if os.path.isdir(os.path.join(dataset, d)))


def duckdb_runner(dataset):
    import duckdb

    con = duckdb.connect()
    for t in tables(dataset):
        if t in UNPARTITIONED:
            source = f"read_parquet('{dataset}/{t}/*.parquet')"
        else:
            source = f"read_parquet('{dataset}/{t}/*/*/*.parquet', hive_partitioning = true, hive_types_autocast = false)"
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM {source}")
    return lambda sql: [list(r) for r in con.execute(sql).fetchall()]


def spark_runner(dataset):
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("oxprof-readers")
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for t in tables(dataset):
        spark.read.option("basePath", f"{dataset}/{t}").parquet(f"{dataset}/{t}").createOrReplaceTempView(t)
    return lambda sql: [list(r) for r in spark.sql(sql).collect()]


def same(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if isinstance(a, float) and math.isnan(a):
            return isinstance(b, float) and math.isnan(b)
        return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)
    if hasattr(b, "__float__") and isinstance(a, (int, float)):  # Decimal
        return same(a, float(b))
    return a == b


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--engine", choices=["duckdb", "spark"], required=True)
    p.add_argument("--oxprof", required=True)
    p.add_argument("--profiles", required=True)
    p.add_argument("--dataset", required=True)
    a = p.parse_args()
    run = duckdb_runner(a.dataset) if a.engine == "duckdb" else spark_runner(a.dataset)
    failures = 0
    for name, sql in queries():
        want = oxprof_rows(a.oxprof, a.profiles, sql)
        got = run(sql)
        ok = len(want) == len(got) and all(
            len(w) == len(g) and all(same(x, y) for x, y in zip(w, g)) for w, g in zip(want, got)
        )
        print(f"{a.engine}: {name}: {'same' if ok else 'DIFFERENT'} ({len(want)} rows)")
        if not ok:
            failures += 1
            for w, g in list(zip(want, got))[:5]:
                print(f"  oxprof {w}\n  {a.engine} {g}")
    if failures:
        sys.exit(f"{failures} queries answered differently by {a.engine}")


if __name__ == "__main__":
    main()
