"""``python -m oxprof ARGS``: runs the ``oxprof`` command installed with this package
(the native binary in the environment's scripts directory), as ``oxprof ARGS`` would."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig


def find_binary() -> str:
    """The ``oxprof`` executable installed with this package (FileNotFoundError if none)."""
    exe = "oxprof" + (sysconfig.get_config_var("EXE") or "")
    candidates = [os.path.join(sysconfig.get_path("scripts"), exe)]
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        candidates.append(os.path.join(sysconfig.get_path("scripts", scheme=user_scheme), exe))
    # `pip install --target DIR` puts scripts in DIR/bin, beside the package.
    candidates.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bin", exe))
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(exe)
    if found:
        return found
    raise FileNotFoundError(f"the oxprof executable is not installed beside this package (looked in {candidates})")


def main() -> None:
    binary = find_binary()
    if sys.platform == "win32":  # pragma: no cover
        import subprocess

        sys.exit(subprocess.call([binary, *sys.argv[1:]]))
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()
