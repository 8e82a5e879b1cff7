#!/usr/bin/env bash
# Bounded fuzz smoke test of the XSpace decoder (fuzz/fuzz_targets/decode_xspace.rs) or,
# with FUZZ_TARGET=import_kineto, of the PyTorch trace importer
# (fuzz/fuzz_targets/import_kineto.rs), or, with FUZZ_TARGET=sql_query, of the SQL engine
# (fuzz/fuzz_targets/sql_query.rs; its build brings DataFusion: long, so CI runs the
# grammar-based scripts/ci/sql-fuzz-smoke.py instead).
#
#   scripts/ci/fuzz-smoke.sh            # 60 s of fuzzing
#   FUZZ_SECONDS=600 scripts/ci/fuzz-smoke.sh
#   FUZZ_TARGET=import_kineto scripts/ci/fuzz-smoke.sh
#
# Steps: install cargo-fuzz if missing, build the target, seed the corpus (small profiles
# under testdata/profiles plus a few XSpaces written here byte by byte; larger profiles
# are decoded once each), fuzz for FUZZ_SECONDS. Exits non-zero on any crash, timeout or
# out-of-memory; the input that triggered it is left in fuzz/artifacts/decode_xspace/.
#
# Runs on the stable toolchain: `--sanitizer none` makes cargo-fuzz pass only stable rustc
# flags (the SanitizerCoverage instrumentation libFuzzer needs is stable). The decoded
# path is safe Rust, so panics, overflow checks (debug assertions are on) and the
# target's own model checks are what find bugs. FUZZ_SANITIZER=address opts into
# AddressSanitizer, which needs unstable rustc flags and so RUSTC_BOOTSTRAP=1 on stable.
#
# import_kineto's corpus: the importer's hand-written traces and committed PyTorch fixtures
# (small ones seed, larger ones are imported once each), a few odd traces written here,
# and a dictionary of JSON tokens (fuzz/import_kineto.dict).
#
# sql_query's corpus: every statement of testdata/sql/*.sql, the views' examples and a few
# hostile statements written here, with a dictionary of SQL tokens (fuzz/sql_query.dict).
#
# Env: FUZZ_TARGET (decode_xspace, import_kineto or sql_query), FUZZ_SECONDS (default 60), FUZZ_SANITIZER (default none),
#      FUZZ_BUILD_ONLY=1 (install and build, then stop),
#      FUZZ_SEED_MAX_BYTES (default 65536: larger decompressed profiles are decoded once
#      each instead of seeding the corpus).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
fuzz_dir="$root/fuzz"
target="${FUZZ_TARGET:-decode_xspace}"
seconds="${FUZZ_SECONDS:-60}"
sanitizer="${FUZZ_SANITIZER:-none}"
seed_max="${FUZZ_SEED_MAX_BYTES:-65536}"
corpus="$fuzz_dir/corpus/$target"
artifacts="$fuzz_dir/artifacts/$target"

log() { printf 'fuzz-smoke: %s\n' "$*" >&2; }

# (a) cargo-fuzz
if ! cargo fuzz --version >/dev/null 2>&1; then
    log "installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi
log "$(cargo fuzz --version), $(rustc --version)"

if [[ "$sanitizer" != none ]] && ! rustc --version | grep -q nightly; then
    export RUSTC_BOOTSTRAP=1 # -Zsanitizer on a stable compiler
fi
cd "$fuzz_dir"

# (b) build
log "building $target (sanitizer: $sanitizer)"
features=()
[[ "$target" == sql_query ]] && features=(--features sql) # DataFusion only for this target
cargo fuzz build --sanitizer "$sanitizer" "${features[@]}" "$target"
if [[ ${FUZZ_BUILD_ONLY:-0} == 1 ]]; then # scripts/test.sh builds ahead, beside other steps
    log "built $target (FUZZ_BUILD_ONLY=1: no fuzzing)"
    exit 0
fi

# (c) seed corpus
mkdir -p "$corpus" "$artifacts"

# Protobuf encoding into hex strings (hex keeps NUL bytes intact in shell variables).
varint() { # unsigned LEB128 of a 64-bit value (negative numbers as two's complement)
    local v=$1 out="" b
    while :; do
        b=$((v & 0x7f))
        v=$(((v >> 7) & 0x01ffffffffffffff))
        if ((v == 0)); then
            out+=$(printf '%02x' "$b")
            break
        fi
        out+=$(printf '%02x' $((b | 0x80)))
    done
    printf '%s' "$out"
}
hexof() { od -An -v -tx1 | tr -d ' \n'; }         # stdin bytes -> hex
str() { printf '%s' "$1" | hexof; }                 # string -> hex
num() { varint $(($1 << 3)); varint "$2"; }         # varint field
msg() { varint $((($1 << 3) | 2)); varint $((${#2} / 2)); printf '%s' "$2"; } # length-delimited field
text() { msg "$1" "$(str "$2")"; }                  # string field
f64() { varint $((($1 << 3) | 1)); printf '%s' "$2"; } # fixed64 field, $2 = 16 hex digits, little-endian
write_hex() { printf '%b' "$(printf '%s' "$1" | sed 's/../\\x&/g')" >"$2"; }

# XStat: metadata_id, then one value field.
stat_i64() { msg "$1" "$(num 1 "$2")$(num 4 "$3")"; }
stat_u64() { msg "$1" "$(num 1 "$2")$(num 3 "$3")"; }
stat_f64() { msg "$1" "$(num 1 "$2")$(f64 2 "$3")"; }
stat_str() { msg "$1" "$(num 1 "$2")$(text 5 "$3")"; }
stat_bytes() { msg "$1" "$(num 1 "$2")$(msg 6 "$3")"; }
stat_ref() { msg "$1" "$(num 1 "$2")$(num 7 "$3")"; }
stat_gz() { msg "$1" "$(num 1 "$2")$(msg 8 "$(printf '%s' "$3" | gzip -c -n | hexof)")"; }
# Map entries of XPlane.stat_metadata (5) and XPlane.event_metadata (4).
stat_meta() { msg 5 "$(num 1 "$1")$(msg 2 "$(num 1 "$1")$(text 2 "$2")$(text 3 "$3")")"; }
event_meta() { msg 4 "$(num 1 "$1")$(msg 2 "$(num 1 "$1")$(text 2 "$2")$3")"; } # key, name, more fields

seed_kineto() {
    printf '%s' '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1.5, "dur": 2,' \
        '"args": {"x": [1, 2], "y": "s"}}, {"ph": "B", "name": "b", "pid": 1, "tid": 1, "ts": 2}, {"ph": "E",' \
        '"pid": 1, "tid": 1, "ts": 3}, {"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 1.5, "cat": "ac2g"},' \
        '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 4, "dur": 1, "args": {"device": 0,' \
        '"stream": 7, "correlation": 1, "grid": [1, 1, 1]}}, {"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 4,' \
        '"cat": "ac2g", "bp": "e"}, {"ph": "C", "name": "c", "pid": 1, "ts": 5, "args": {"a": 1, "b": 2}},' \
        '{"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "main"}}],' \
        '"baseTimeNanoseconds": 1700000000000000000}' >"$corpus/seed-kineto-small"
    printf '%s' '[{"ph": "X", "name": "a", "ts": "1", "dur": NaN}, {"ph": "i", "name": "b", "ts": 2},]' >"$corpus/seed-kineto-array"
    printf '%s' '{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}, {"ph": "X", "na' \
        >"$corpus/seed-kineto-truncated"
}

seed_synthetic() {
    local line1 line2 cpu gpu
    line1="$(num 1 1)$(num 10 1)$(text 2 python)$(text 11 'Python thread')$(num 3 1700000000000000000)$(num 9 2000000)"
    line1+=$(msg 4 "$(num 1 1)$(num 2 0)$(num 3 100000)$(stat_i64 4 1 3)$(stat_i64 4 2 1)$(stat_u64 4 3 7)$(stat_f64 4 8 000000000000f83f)$(stat_str 4 5 'kernel<<<1,1>>>')$(stat_bytes 4 6 0102ff00)$(stat_ref 4 7 1)$(stat_gz 4 5 'compressed text')")
    line1+=$(msg 4 "$(num 1 2)$(num 2 10)$(num 3 500)$(stat_u64 4 4 -1)")
    line1+=$(msg 4 "$(num 1 2)$(num 5 42)$(num 3 900)")         # aggregated: num_occurrences
    line1+=$(msg 4 "$(num 1 99)$(num 2 20)$(num 3 1)$(stat_i64 4 77 -5)") # unknown event and stat metadata
    line2="$(num 1 2)$(text 2 'tf_Compute')$(num 3 1700000000000001000)"
    line2+=$(msg 4 "$(num 1 3)$(num 2 5)$(num 3 7)$(stat_u64 4 3 7)$(stat_i64 4 2 1)")
    cpu="$(num 1 0)$(text 2 /host:CPU)$(msg 3 "$line1")$(msg 3 "$line2")"
    cpu+=$(event_meta 1 train "$(text 4 'train step')$(msg 3 0a0b)$(stat_i64 5 1 3)$(msg 6 "$(varint 2)$(varint 3)")")
    cpu+=$(event_meta 2 matmul "$(num 6 1)")
    cpu+=$(event_meta 3 'ExecutorState::Process' "")
    cpu+="$(stat_meta 1 step_num '')$(stat_meta 2 _r '')$(stat_meta 3 group_id '')$(stat_meta 4 correlation_id '')"
    cpu+="$(stat_meta 5 kernel_details 'launch details')$(stat_meta 6 'Hlo Proto' '')$(stat_meta 7 flow '')$(stat_meta 8 fragmentation '')"
    cpu+="$(stat_i64 6 1 12)$(stat_str 6 6 plane-level)"
    gpu="$(num 1 1)$(text 2 /device:GPU:0)$(num 15 9)" # field 15: unknown
    gpu+=$(msg 3 "$(num 1 7)$(text 2 'Stream #7')$(num 3 1700000000000000000)$(msg 4 "$(num 1 1)$(num 2 3)$(num 3 4)")")
    gpu+="$(event_meta 1 'fusion.1' "")$(stat_meta 1 clock_rate '')$(stat_u64 6 1 1410000)$(stat_f64 6 1 000000000000f0bf)"

    write_hex "$(text 4 host-0)$(text 2 'an error')$(text 3 'a warning')" "$corpus/seed-hostnames"
    write_hex "$(msg 1 "$cpu")$(text 4 host-0)" "$corpus/seed-host-plane"
    write_hex "$(msg 1 "$cpu")$(msg 1 "$gpu")$(num 9 1)$(text 4 host-0)" "$corpus/seed-two-planes"
    write_hex "$(msg 1 "$(text 2 /host:CPU)")" "$corpus/seed-empty-plane"
    gzip -c -n "$corpus/seed-host-plane" >"$corpus/seed-host-plane-gzip"
}
# Real profiles: small ones seed the corpus; larger ones are decoded and walked once each
# (fuzzing megabyte inputs runs ~200x slower and covered less in a 60 s run than the
# synthetic seeds alone, measured on the 0.5-1 MB profiles of testdata/profiles).
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
touch "$work/.start" # artifacts newer than this come from this run
seeded=0 large=0
# Seeds a file (gzip or plain): small ones into the corpus, large ones decoded once each.
seed_file() { # $1 = file, $2 = corpus name
    local name="$2"
    if [[ "$1" == *.gz ]]; then
        if ! gzip -dc "$1" >"$work/$name"; then
            log "warning: cannot decompress $1, skipped"
            rm -f "$work/$name"
            return
        fi
    else
        cp "$1" "$work/$name"
    fi
    if (($(stat -c %s "$work/$name") <= seed_max)); then
        mv "$work/$name" "$corpus/$name"
        seeded=$((seeded + 1))
    else
        large=$((large + 1))
    fi
}
seed_sql() {
    local n=0 statement
    for f in "$root"/testdata/sql/*.sql; do
        # One statement per `;`, comments dropped.
        while IFS= read -r -d ';' statement; do
            statement="$(printf '%s' "$statement" | grep -v '^[[:space:]]*--' | tr '\n' ' ')"
            [[ -n "${statement// /}" ]] || continue
            printf '%s' "$statement" >"$corpus/seed-sql-$n"
            n=$((n + 1))
        done <"$f"
    done
    printf '%s' "SELECT * FROM top_ops_per_step WHERE rank <= 3 ORDER BY step, rank" >"$corpus/seed-sql-view"
    printf '%s' "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 100) SELECT count(*) FROM t" >"$corpus/seed-sql-recursive"
    printf '%s' "SELECT length(repeat('x', 1000) || lpad(name, 20, '.')) FROM slice LIMIT 3" >"$corpus/seed-sql-strings"
    printf '%s' "WITH a AS (SELECT 1 AS x), b AS (SELECT x FROM a UNION ALL SELECT x FROM a) SELECT count(*) FROM b" >"$corpus/seed-sql-cte"
}
if [[ "$target" == decode_xspace ]]; then
    seed_synthetic
    seed_dir="$root/testdata/profiles"
    pattern='*.xplane.pb.gz'
elif [[ "$target" == sql_query ]]; then
    seed_sql
    seed_dir=""
else
    seed_kineto
    for f in "$root"/crates/oxprof-kineto/tests/data/*.json; do
        seed_file "$f" "testdata-$(basename "$f")"
    done
    seed_dir="$root/testdata/kineto"
    pattern='*.json.gz'
fi
if [[ -n "$seed_dir" && -d "$seed_dir" ]]; then
    while IFS= read -r -d '' gz; do
        name="testdata-$(printf '%s' "${gz#"$root/testdata/"}" | tr '/' '_')"
        seed_file "$gz" "${name%.gz}"
    done < <(find "$seed_dir" -name "$pattern" -type f -print0 | sort -z)
fi
log "corpus: $(find "$corpus" -type f | wc -l) files; testdata: $seeded seeded," \
    "$large larger than $seed_max bytes (decoded once each)"

# Runs the fuzz binary; on failure names the reproducers and exits with its status.
# libFuzzer's progress lines (thousands) go to a log: only its end is shown, so that the end of
# a CI log still shows the run's step timings.
fuzz() {
    local status=0
    cargo fuzz run --sanitizer "$sanitizer" "${features[@]}" "$target" "$@" >"$work/run.log" 2>&1 || status=$?
    log "libFuzzer's last lines ($(wc -l <"$work/run.log") in all):"
    tail -n "$( ((status == 0)) && echo 8 || echo 200)" "$work/run.log" >&2
    if ((status != 0)); then
        log "FAILED (exit $status): crash, timeout or out-of-memory. Reproducers:"
        find "$artifacts" -type f -newer "$work/.start" -print >&2 || true
        log "reproduce: (cd fuzz && cargo fuzz run --sanitizer $sanitizer ${features[*]} $target <file>)"
        exit "$status"
    fi
}
limits=(-rss_limit_mb=2048 -timeout=10)
if [[ -f "$fuzz_dir/$target.dict" ]]; then
    limits+=("-dict=$fuzz_dir/$target.dict")
fi
if ((large > 0)); then
    log "decoding the $large larger profiles once each"
    fuzz "$work"/testdata-* -- "${limits[@]}"
fi

# (d) fuzz
log "fuzzing $target for ${seconds}s"
fuzz "$corpus" -- -max_total_time="$seconds" "${limits[@]}" -print_final_stats=1
log "passed: no crash in ${seconds}s"
