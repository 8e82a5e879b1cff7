#!/usr/bin/env bash
# A real Spark standalone cluster on 127.0.0.1 for oxprof's pod tests and benchmarks: one
# master and two workers (separate JVMs, 1 core each), from the Spark that the pyspark 3.5
# pip package bundles (venv cached in ~/.cache/oxprof-sql-venv, as scripts/ci/test-sql-readers.sh
# makes it; Java 17 from Debian's openjdk-17-jre-headless when java is missing).
#
#   scripts/ci/spark-cluster.sh start DIR   start it, state and logs in DIR; writes DIR/env (source it)
#   scripts/ci/spark-cluster.sh stop DIR    stop what `start DIR` started (and its watchdog)
#
# Everything binds 127.0.0.1 (SPARK_LOCAL_IP, --host; the web UIs too, on free ports), and a
# watchdog kills the daemons after SPARK_CLUSTER_MINUTES (default 30) if stop never comes.
# DIR/env exports SPARK_MASTER_URL (spark://127.0.0.1:PORT), SPARK_MASTER_WEBUI,
# SPARK_HOME, SPARK_LOCAL_IP, PYSPARK_PYTHON (the venv's python, for the driver and the
# executors) and SPARK_SUBMIT (spark-submit).
#   SPARK_WORKERS=N          workers (default 2)
#   SPARK_WORKER_MEMORY=1g   memory each worker offers its executors (default 1g)
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?state directory}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

stop_pid() { # pid file: TERM, then KILL after 5 s
  local pidfile=$1 pid
  [[ -f $pidfile ]] || return 0
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

if [[ $cmd == stop ]]; then
  # Workers first (each stops its executors), then the master, then the watchdog.
  for pidfile in "$dir"/worker-*.pid "$dir"/master.pid; do stop_pid "$pidfile"; done
  # The watchdog leads a process group of its own (setsid): its sleep goes with it.
  if [[ -f $dir/watchdog.pid ]]; then
    kill -- "-$(cat "$dir/watchdog.pid")" 2>/dev/null || true
    rm -f "$dir/watchdog.pid"
  fi
  exit 0
fi
[[ $cmd == start ]] || { echo "spark-cluster: usage: $0 start|stop DIR" >&2; exit 2; }

# --- install (cached) ---
venv="$HOME/.cache/oxprof-sql-venv"
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import duckdb, pyspark' 2>/dev/null; then
  echo "spark-cluster: venv with pyspark ($venv)" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'duckdb>=1,<3' 'pyspark==3.5.*'
fi
if ! command -v java >/dev/null; then
  echo "spark-cluster: Java for Spark (Debian openjdk-17-jre-headless)" >&2
  sudo_=""; [[ $(id -u) == 0 ]] || sudo_=sudo
  $sudo_ apt-get update -qq && $sudo_ apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
spark_home=$("$venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if compgen -G "$dir/*.pid" >/dev/null; then
  echo "spark-cluster: $dir already has a running cluster's pid files; stop it first" >&2; exit 1
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# A conf dir of our own (no user spark-defaults.conf), logs and scratch under DIR.
mkdir -p "$dir/conf" "$dir/logs" "$dir/local" "$dir/work"
export SPARK_HOME=$spark_home SPARK_CONF_DIR=$dir/conf SPARK_LOG_DIR=$dir/logs
export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=127.0.0.1 SPARK_PUBLIC_DNS=127.0.0.1
export SPARK_LOCAL_DIRS=$dir/local SPARK_DAEMON_MEMORY=256m SPARK_NO_DAEMONIZE=1
cat > "$dir/conf/spark-defaults.conf" <<CONF
spark.ui.enabled false
spark.master.rest.enabled false
CONF
# Warnings and errors only (Spark's default is INFO, a hundred lines per job).
cat > "$dir/conf/log4j2.properties" <<'CONF'
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
CONF

master_port=$(free_port); master_ui=$(free_port)
"$spark_home/bin/spark-class" org.apache.spark.deploy.master.Master \
  --host 127.0.0.1 --port "$master_port" --webui-port "$master_ui" \
  >"$dir/logs/master.log" 2>&1 &
echo $! >"$dir/master.pid"
master=spark://127.0.0.1:$master_port

# The watchdog: a process of its own (it outlives this script), ending the daemons after the
# time limit; `stop` ends it first-hand.
minutes=${SPARK_CLUSTER_MINUTES:-30}
setsid bash -c 'sleep "$1"; for f in "$2"/worker-*.pid "$2"/master.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; rm -f "$f"; done; rm -f "$2/watchdog.pid"' \
  _ "$((minutes * 60))" "$dir" </dev/null >/dev/null 2>&1 &
echo $! >"$dir/watchdog.pid"

up() { # url: the master's web UI answers with its state as JSON
  python3 - "$1" "$2" <<'PY'
import json, sys, urllib.request
try:
    state = json.load(urllib.request.urlopen(sys.argv[1] + "/json/", timeout=1))
except Exception:
    sys.exit(1)
sys.exit(0 if state.get("status") == "ALIVE" and state.get("aliveworkers", 0) >= int(sys.argv[2]) else 1)
PY
}
for _ in $(seq 1 300); do up "http://127.0.0.1:$master_ui" 0 && break; sleep 0.2; done
up "http://127.0.0.1:$master_ui" 0 || { echo "spark-cluster: the master did not start (see $dir/logs/master.log)" >&2; "$0" stop "$dir"; exit 1; }

workers=${SPARK_WORKERS:-2}
for i in $(seq 1 "$workers"); do
  mkdir -p "$dir/work/$i"
  SPARK_WORKER_DIR=$dir/work/$i "$spark_home/bin/spark-class" org.apache.spark.deploy.worker.Worker \
    --host 127.0.0.1 --port "$(free_port)" --webui-port "$(free_port)" \
    --cores 1 --memory "${SPARK_WORKER_MEMORY:-1g}" --work-dir "$dir/work/$i" "$master" \
    >"$dir/logs/worker-$i.log" 2>&1 &
  echo $! >"$dir/worker-$i.pid"
done
for _ in $(seq 1 300); do up "http://127.0.0.1:$master_ui" "$workers" && break; sleep 0.2; done
up "http://127.0.0.1:$master_ui" "$workers" || {
  echo "spark-cluster: not all $workers workers registered (see $dir/logs/worker-*.log)" >&2; "$0" stop "$dir"; exit 1; }

cat >"$dir/env" <<ENV
export SPARK_MASTER_URL=$master
export SPARK_MASTER_WEBUI=http://127.0.0.1:$master_ui
export SPARK_HOME=$spark_home
export SPARK_CONF_DIR=$dir/conf
export SPARK_LOCAL_IP=127.0.0.1
export SPARK_LOCAL_HOSTNAME=127.0.0.1
export SPARK_LOCAL_DIRS=$dir/local
export PYSPARK_PYTHON=$venv/bin/python
export PYSPARK_DRIVER_PYTHON=$venv/bin/python
export SPARK_SUBMIT=$spark_home/bin/spark-submit
ENV
echo "spark-cluster: master $master with $workers workers (1 core each), web UI http://127.0.0.1:$master_ui; stops by itself in $minutes min; source $dir/env"
