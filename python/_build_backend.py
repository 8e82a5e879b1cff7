"""The PEP 517 backend of the oxprof wheel: maturin's, with the `oxprof` binary built first.

`pip install .`, `pip wheel .`, `python -m build` and scripts/dev/build-wheel.sh all come
here (pyproject.toml names this module with `backend-path`). A wheel holds the extension
module oxprof._oxprof (maturin builds it) and the native `oxprof` binary, installed on PATH
like ruff's and uv's: built here with cargo (through maturin, with the same flags as the
extension, so the two builds share every compiled crate) into the data directory that
pyproject.toml's `[tool.maturin] data` names, before maturin packs the wheel.

On Linux x86_64 and aarch64 both are linked for manylinux_2_28 with zig from PyPI (the
`ziglang` build requirement), so the wheel runs on any glibc >= 2.28; elsewhere, or with
`--config-settings oxprof.zig=false` (or OXPROF_WHEEL_ZIG=0), for this machine only.

Both are built with cargo's `release` profile, or with the one `--config-settings
oxprof.profile=NAME` (or OXPROF_WHEEL_PROFILE=NAME) names: CI's test wheel uses `wheel-ci`
(the workspace's Cargo.toml says why), and a `pip install .` under the same setting reuses
its crates.

cargo recompiles every crate when the linker's path changes, and maturin's zig linker
wrapper lives at a path derived from maturin's own: pip's isolated build environment is a
fresh temporary directory each time, so maturin is run from a copy at a fixed place under
the target directory. A second `pip install .` then reuses the first one's crates.

An sdist is maturin's plus what maturin leaves out: the whole workspace's manifest and its
other crates (the binary's), so that the wheel built from it holds the same binary.
"""

from __future__ import annotations

import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional

import maturin

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11: maturin's own dependency
    import tomli as tomllib  # type: ignore[no-redef]

# The zig that links the manylinux build (pinned: the wheel's build is reproducible).
ZIGLANG = "ziglang==0.17.0"
GLIBC = "2.28"
# Where the binary's crate is, relative to the project root.
BINARY_MANIFEST = "crates/oxprof/Cargo.toml"

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]


class BuildError(RuntimeError):
    """A build step failed; the message says which and what to do."""


# ---- PEP 517 hooks ------------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings: Optional[Mapping[str, Any]] = None) -> List[str]:
    extra = [ZIGLANG] if _zig_target(config_settings) else []
    return [*maturin.get_requires_for_build_wheel(config_settings), *extra]


def get_requires_for_build_editable(config_settings: Optional[Mapping[str, Any]] = None) -> List[str]:
    return get_requires_for_build_wheel(config_settings)


def get_requires_for_build_sdist(config_settings: Optional[Mapping[str, Any]] = None) -> List[str]:
    return maturin.get_requires_for_build_sdist(config_settings)


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: Optional[Mapping[str, Any]] = None
) -> str:
    _data_dir(Path.cwd()).mkdir(parents=True, exist_ok=True)  # maturin wants it to exist
    return maturin.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def prepare_metadata_for_build_editable(
    metadata_directory: str, config_settings: Optional[Mapping[str, Any]] = None
) -> str:
    _data_dir(Path.cwd()).mkdir(parents=True, exist_ok=True)
    return maturin.prepare_metadata_for_build_editable(metadata_directory, config_settings)


def build_wheel(
    wheel_directory: str,
    config_settings: Optional[Mapping[str, Any]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    with _build_environment(config_settings) as settings:
        return maturin.build_wheel(wheel_directory, settings, metadata_directory)


def build_editable(
    wheel_directory: str,
    config_settings: Optional[Mapping[str, Any]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    with _build_environment(config_settings) as settings:
        return maturin.build_editable(wheel_directory, settings, metadata_directory)


def build_sdist(sdist_directory: str, config_settings: Optional[Mapping[str, Any]] = None) -> str:
    name = maturin.build_sdist(sdist_directory, config_settings)
    _complete_sdist(Path(sdist_directory) / name, Path.cwd())
    return name


# ---- the wheel ----------------------------------------------------------------------------


def _setting(config_settings: Optional[Mapping[str, Any]], key: str, env: str) -> Optional[str]:
    value = (config_settings or {}).get(key)
    if value is None:
        value = os.environ.get(env)
    return None if value is None else str(value).strip().lower()


def _zig_target(config_settings: Optional[Mapping[str, Any]]) -> Optional[str]:
    """The target triple of a manylinux build with zig, or None for a build for this machine."""
    wanted = _setting(config_settings, "oxprof.zig", "OXPROF_WHEEL_ZIG")
    machine = platform.machine().lower()
    arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(machine)
    if wanted in ("0", "false", "no", "off"):
        return None
    if wanted not in (None, "", "1", "true", "yes", "on"):
        raise BuildError(f"oxprof.zig={wanted!r}: give true or false")
    if not sys.platform.startswith("linux") or arch is None:
        if wanted is not None:
            raise BuildError(f"oxprof.zig: the manylinux build is for Linux x86_64 and aarch64, not {sys.platform} {machine}")
        return None
    return f"{arch}-unknown-linux-gnu"


def _profile(config_settings: Optional[Mapping[str, Any]]) -> str:
    """The cargo profile both builds use: `release` unless oxprof.profile names another."""
    wanted = _setting(config_settings, "oxprof.profile", "OXPROF_WHEEL_PROFILE")
    if not wanted:
        return "release"
    if not all(c.isascii() and (c.isalnum() or c in "-_") for c in wanted):
        raise BuildError(f"oxprof.profile={wanted!r}: give the name of a profile in the workspace's Cargo.toml")
    return wanted


def _cargo_args(target: Optional[str], profile: str) -> List[str]:
    """What both builds (the binary, the extension) pass to maturin: the same flags, so cargo
    compiles each shared crate once."""
    # maturin's PEP 517 build is a release build unless told otherwise.
    common = ["--locked"] if profile == "release" else ["--locked", "--profile", profile]
    if target is None:
        return common
    return [*common, "--zig", "--target", target, "--compatibility", f"manylinux_{GLIBC.replace('.', '_')}"]


@contextmanager
def _build_environment(config_settings: Optional[Mapping[str, Any]]) -> Iterator[Dict[str, Any]]:
    """Builds the binary into the data directory, and yields maturin's config settings for
    the extension, with the environment both builds share set meanwhile."""
    root = Path.cwd()
    target = _zig_target(config_settings)
    profile = _profile(config_settings)
    settings = dict(config_settings or {})
    user_args = maturin.get_maturin_pep517_args(config_settings)
    settings["maturin.build-args"] = [*_cargo_args(target, profile), *user_args]
    settings.pop("build-args", None)
    target_dir = _target_dir(root)
    saved = dict(os.environ)
    try:
        os.environ["PATH"] = os.pathsep.join([str(_stable_maturin(target_dir)), os.path.dirname(sys.executable), saved.get("PATH", "")])
        # Build the extension against the base interpreter: the same for every venv.
        os.environ["MATURIN_PEP517_USE_BASE_PYTHON"] = "1"
        if target is not None:
            # glibc 2.28's loader does not read packed relocations (DT_RELR, glibc >= 2.36):
            # the binary's build.rs leaves them out under zig anyway; this says so.
            os.environ["OXPROF_PACK_RELOCS"] = "0"
        _binary(root, _empty_data_dir(root), target, profile)
        yield settings
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _target_dir(root: Path) -> Path:
    """cargo's target directory for this workspace (CARGO_TARGET_DIR and .cargo/config too)."""
    done = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--manifest-path", str(root / BINARY_MANIFEST)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise BuildError(f"cargo metadata failed (is the Rust toolchain installed?): {done.stderr.strip()}")
    return Path(json.loads(done.stdout)["target_directory"])


def _stable_maturin(target_dir: Path) -> Path:
    """A directory holding a copy of the `maturin` on PATH at a fixed place (see the module's
    doc): maturin's zig linker wrapper, whose path cargo fingerprints, is named after it."""
    found = shutil.which("maturin")
    if found is None:
        raise BuildError("maturin is not on PATH: pip installs it as a build requirement (pyproject.toml)")
    bin_dir = target_dir / "oxprof-build" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    copy = bin_dir / "maturin"
    source = Path(found)
    if source.resolve() == copy.resolve():
        return bin_dir
    if not copy.is_file() or copy.read_bytes() != source.read_bytes():
        # Into place atomically: a concurrent build may be running the old copy.
        fd, temporary = tempfile.mkstemp(dir=bin_dir, prefix=".maturin-")
        os.close(fd)
        shutil.copy2(source, temporary)
        os.replace(temporary, copy)
    return bin_dir


def _binary(root: Path, data_dir: Path, target: Optional[str], profile: str) -> Path:
    """Puts the `oxprof` binary into `data_dir`/scripts/: OXPROF_PREBUILT_BIN, or built now
    with `profile`."""
    scripts = data_dir / "scripts"
    exe = "oxprof.exe" if sys.platform == "win32" else "oxprof"
    prebuilt = os.environ.get("OXPROF_PREBUILT_BIN")
    if prebuilt:
        print(f"oxprof build: the oxprof binary from OXPROF_PREBUILT_BIN={prebuilt} (not built)", file=sys.stderr)
        if not Path(prebuilt).is_file():
            raise BuildError(f"OXPROF_PREBUILT_BIN={prebuilt} is not a file")
        scripts.mkdir(parents=True)
        shutil.copy2(prebuilt, scripts / exe)
    else:
        where = f"{target}, glibc {GLIBC}" if target else "this machine"
        print(f"oxprof build: the oxprof binary (profile {profile}, {where})", file=sys.stderr)
        # Built as maturin's `bin` wheel of crates/oxprof, which is thrown away but for the
        # binary it holds (stripped, as pyproject.toml says). maturin reads the data
        # directory for that wheel too: it is there, empty, meanwhile.
        with tempfile.TemporaryDirectory(prefix="oxprof-bin-wheel-") as out:
            release = ["--release"] if profile == "release" else []
            command = ["maturin", "build", *release, *_cargo_args(target, profile), "-m", str(root / BINARY_MANIFEST)]
            command += ["-b", "bin", "--out", out]
            # Its output goes to stderr: a PEP 517 frontend may read the hook's stdout.
            done = subprocess.run(command, stdout=sys.stderr, check=False)
            if done.returncode != 0:
                raise BuildError(f"building the oxprof binary failed: {' '.join(command)} exited {done.returncode}")
            wheels = list(Path(out).glob("*.whl"))
            with zipfile.ZipFile(wheels[0]) as wheel:
                member = next((n for n in wheel.namelist() if n.endswith(f".data/scripts/{exe}")), None)
                if member is None:
                    raise BuildError(f"maturin's bin wheel {wheels[0].name} holds no scripts/{exe}")
                scripts.mkdir(parents=True)
                with wheel.open(member) as source, open(scripts / exe, "wb") as copy:
                    shutil.copyfileobj(source, copy)
        os.chmod(scripts / exe, 0o755)
    binary = scripts / exe
    if target is not None and shutil.which("readelf"):
        dynamic = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True, check=False).stdout
        if "(RELR)" in dynamic:
            raise BuildError(f"{binary} has packed relocations (DT_RELR): glibc {GLIBC} could not load it")
    return binary


def _data_dir(root: Path) -> Path:
    """The data directory pyproject.toml names (maturin packs what it holds into the wheel)."""
    with open(root / "pyproject.toml", "rb") as f:
        data = tomllib.load(f).get("tool", {}).get("maturin", {}).get("data")
    if not data:
        raise BuildError("pyproject.toml's [tool.maturin] names no data directory for the binary")
    return root / data


def _empty_data_dir(root: Path) -> Path:
    """The data directory, made afresh and empty (it is this backend's own, under the target
    directory: it holds only scripts/oxprof)."""
    data_dir = _data_dir(root)
    if data_dir.is_symlink():
        raise BuildError(f"{data_dir} is a symbolic link: the build writes only a directory of its own there")
    if data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    return data_dir


# ---- the sdist ----------------------------------------------------------------------------


def _complete_sdist(sdist: Path, root: Path) -> None:
    """Adds to maturin's sdist what building the binary needs: the workspace's own
    Cargo.toml (maturin writes one listing only the extension's crates) and the files of the
    crates maturin left out, as `cargo package --list` names them."""
    with open(root / "Cargo.toml", "rb") as f:
        members = tomllib.load(f)["workspace"]["members"]
    with tarfile.open(sdist, "r:gz") as tar:
        entries = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()]  # type: ignore[union-attr]
    prefix = entries[0][0].name.split("/", 1)[0]
    names = {m.name for m, _ in entries}
    added: List[str] = []
    for member in members:
        if f"{prefix}/{member}/Cargo.toml" in names:
            continue
        manifest = root / member / "Cargo.toml"
        listed = subprocess.run(
            ["cargo", "package", "--list", "--allow-dirty", "--locked", "--manifest-path", str(manifest)],
            capture_output=True,
            text=True,
            check=False,
        )
        if listed.returncode != 0:
            raise BuildError(f"cargo package --list failed for {member}: {listed.stderr.strip()}")
        for relative in listed.stdout.split():
            # cargo names files it would generate (Cargo.toml.orig, .cargo_vcs_info.json).
            if (root / member / relative).is_file():
                added.append(f"{member}/{relative}")
    template = entries[0][0]
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for member, content in entries:
            if member.name == f"{prefix}/Cargo.toml":
                content = (root / "Cargo.toml").read_bytes()
                member.size = len(content)
            tar.addfile(member, io.BytesIO(content) if content is not None else None)
        for relative in sorted(set(added)):
            content = (root / relative).read_bytes()
            info = tarfile.TarInfo(f"{prefix}/{relative}")
            info.size = len(content)
            info.mtime = template.mtime
            info.mode = 0o755 if os.access(root / relative, os.X_OK) else 0o644
            tar.addfile(info, io.BytesIO(content))
    tmp = sdist.with_name(sdist.name + ".tmp")
    tmp.write_bytes(out.getvalue())
    os.replace(tmp, sdist)
