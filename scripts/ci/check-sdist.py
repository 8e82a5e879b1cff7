#!/usr/bin/env python3
"""Checks that an oxprof sdist holds what building its wheel needs, without building it: the
workspace's Cargo.toml (every member) with each member's manifest and sources, Cargo.lock,
pyproject.toml with the build backend it names, the UI bundle the server embeds, and every
file a crate's non-test source embeds (`include_bytes!`/`include_str!`); and that cargo
resolves the unpacked workspace offline with the lock file as it is.
Usage: python check-sdist.py SDIST.tar.gz
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

INCLUDE = re.compile(r'include_(?:bytes|str)!\(\s*"([^"]+)"\s*\)')


def main() -> int:
    sdist = Path(sys.argv[1])
    problems = []
    with tempfile.TemporaryDirectory(prefix="oxprof-sdist-check-") as tmp:
        with tarfile.open(sdist, "r:gz") as tar:
            tar.extractall(tmp, filter="data")
        (root,) = Path(tmp).iterdir()
        workspace = tomllib.loads((root / "Cargo.toml").read_text())["workspace"]
        checkout = Path(__file__).resolve().parents[2] / "Cargo.toml"
        if checkout.is_file() and tomllib.loads(checkout.read_text())["workspace"]["members"] != workspace["members"]:
            problems.append("its Cargo.toml does not list the checkout's workspace members")
        for member in workspace["members"]:
            if not (root / member / "Cargo.toml").is_file() or not (root / member / "src").is_dir():
                problems.append(f"workspace member {member} is missing")
        for name in ["Cargo.lock", "pyproject.toml", "ui/dist/index.html", "PKG-INFO"]:
            if not (root / name).is_file():
                problems.append(f"{name} is missing")
        system = tomllib.loads((root / "pyproject.toml").read_text())["build-system"]
        for path in system.get("backend-path", []):
            module = root / path / (system["build-backend"].split(":")[0].replace(".", "/") + ".py")
            if not module.is_file():
                problems.append(f"the build backend {module.relative_to(root)} is missing")
        for source in (root / "crates").glob("*/src/**/*.rs"):
            if "test" in source.name:
                continue
            for relative in INCLUDE.findall(source.read_text(errors="replace")):
                if not (source.parent / relative).is_file():
                    problems.append(f"{source.relative_to(root)} embeds {relative}, which is missing")
        metadata = subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked", "--offline", "--manifest-path", str(root / "Cargo.toml")],
            capture_output=True,
            text=True,
            check=False,
        )
        if metadata.returncode != 0:
            problems.append(f"cargo metadata --locked --offline fails: {metadata.stderr.strip()[-2000:]}")
        files = sum(1 for p in root.rglob("*") if p.is_file())
    for problem in problems:
        print(f"check-sdist: {problem}", file=sys.stderr)
    if not problems:
        print(f"check-sdist: {sdist.name} holds the workspace ({len(workspace['members'])} crates, {files} files) and what it embeds")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
