#!/usr/bin/env python3
"""What each crate costs in a release binary: sums the sizes of the code symbols (`nm`,
demangled) of an unstripped binary by the crate that asked for them, and prints JSON.

    python3 scripts/bench/binary-size-breakdown.py BINARY [--top N]

A symbol's crate is its path's first segment, or for `<T as Trait>::f` the crate of `T`. Generic
code of `core`/`alloc`/`std` (drop glue, iterators, `Vec<T>` methods: the biggest single item
in a Rust binary) is charged to the first other crate named in its type arguments, so that
`core::ptr::drop_in_place<datafusion_expr::Expr>` counts for DataFusion; the rest stays with
the standard library. C symbols are charged by prefix (aws-lc, zstd). Crates are then grouped
into families (`datafusion-*` together, `arrow-*` together, …). Sizes are of `.text`
symbols; aliases of one address are counted once. The binary's sections (`size -A`)
are printed too, so that data, unwind tables and the symbol table show beside the code.
"""

import argparse
import json
import re
import subprocess
import sys

# `T`, `F`, …: legacy mangling names some impls by their generic parameter only.
STD = {"core", "alloc", "std", "hashbrown", "<unknown>", "T", "F", "I", "S", "R", "W", "A", "K", "V"}
# Crate families: the first matching prefix names the group.
FAMILIES = [
    ("std", "standard library (and generics traced to no crate)"),
    ("oxprof", "oxprof (our crates)"),
    ("datafusion", "datafusion-*"),
    ("sqlparser", "sqlparser"),
    ("arrow", "arrow-*"),
    ("parquet", "parquet"),
    ("object_store", "object_store"),
    ("aws_lc", "aws-lc (TLS crypto, C)"),
    ("rustls", "rustls + webpki"),
    ("webpki", "rustls + webpki"),
    ("zstd", "zstd (C)"),
    ("ZSTD", "zstd (C)"),
    ("HUF_", "zstd (C)"),
    ("FSE_", "zstd (C)"),
    ("HIST_", "zstd (C)"),
    ("ZDICT", "zstd (C)"),
    ("rmcp", "rmcp (MCP)"),
    ("tonic", "tonic + h2 + hyper + axum + tower"),
    ("h2", "tonic + h2 + hyper + axum + tower"),
    ("hyper", "tonic + h2 + hyper + axum + tower"),
    ("axum", "tonic + h2 + hyper + axum + tower"),
    ("tower", "tonic + h2 + hyper + axum + tower"),
    ("reqwest", "reqwest"),
    ("tokio", "tokio"),
    ("serde", "serde + serde_json"),
    ("clap", "clap (+ complete, mangen)"),
    ("regex", "regex"),
    ("prost", "prost"),
    ("schemars", "schemars"),
]
C_PREFIXES = [("aws_lc", "aws_lc"), ("ZSTD", "zstd"), ("HUF_", "zstd"), ("FSE_", "zstd"),
              ("HIST_", "zstd"), ("ZDICT", "zstd"), ("ecp_", "aws_lc"), ("bn_", "aws_lc")]
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def crate_of_path(path):
    """The crate of a demangled Rust path: its first segment, or for `<T as Tr>::f` T's."""
    p = path.lstrip()
    while p.startswith("<"):
        p = p[1:].lstrip()
        for prefix in ("&mut ", "&", "*const ", "*mut ", "dyn ", "mut ", "[", "("):
            if p.startswith(prefix):
                p = p[len(prefix):].lstrip()
    m = IDENT.match(p)
    return m.group(0) if m else "<unknown>"


def owner(name):
    for prefix, crate in C_PREFIXES:
        if name.startswith(prefix):
            return crate
    crate = crate_of_path(name)
    if crate in STD:
        # Generic standard-library code: charge the first non-std crate in the type arguments.
        for m in re.finditer(r"(?:^|[<(\[&, *])([a-z_][a-z0-9_]*)::", name):
            other = m.group(1)
            if other not in STD:
                return other
        return "std"
    return crate


def family(crate):
    for prefix, name in FAMILIES:
        if crate.startswith(prefix):
            return name
    return crate


def sections(binary):
    out = subprocess.run(["size", "-A", binary], check=True, capture_output=True, text=True).stdout
    result = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].startswith(".") and parts[1].isdigit():
            result[parts[0]] = int(parts[1])
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--top", type=int, default=20, help="families listed (the rest summed)")
    args = parser.parse_args()
    nm = subprocess.run(["nm", "-S", "--size-sort", "--radix=d", "-C", args.binary],
                        check=True, capture_output=True, text=True).stdout
    seen = set()
    by_family, by_crate = {}, {}
    total = 0
    for line in nm.splitlines():
        parts = line.split(" ", 3)
        if len(parts) != 4 or parts[2] not in ("t", "T", "w", "W"):
            continue
        address, size, name = parts[0], int(parts[1]), parts[3]
        if size == 0 or address in seen:
            continue
        seen.add(address)
        crate = owner(name)
        total += size
        by_crate[crate] = by_crate.get(crate, 0) + size
        fam = family(crate)
        by_family[fam] = by_family.get(fam, 0) + size
    if total == 0:
        sys.exit(f"binary-size-breakdown: {args.binary} has no symbols (stripped?): give the unstripped binary")
    ranked = sorted(by_family.items(), key=lambda kv: -kv[1])
    top = ranked[: args.top]
    rest = sum(size for _, size in ranked[args.top:])
    print(json.dumps({
        "sections": sections(args.binary),
        "code_symbols_bytes": total,
        "families": [[name, size] for name, size in top] + ([["everything else", rest]] if rest else []),
        "crates": [[name, size] for name, size in sorted(by_crate.items(), key=lambda kv: -kv[1])[:40]],
    }, indent=1))


if __name__ == "__main__":
    main()
