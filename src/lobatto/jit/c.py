"""Run-time C compilation: build a shared library with the system C compiler, load it with ctypes.

One shared library per (source file, specialisation macros), e.g. a kernel source with
-DNQ=8 -DREAL=double. Sources are given by path, so each layer keeps its kernels beside its
Python code (lobatto/comm/kernels, lobatto/systems/*/kernels). Libraries live in a per-user cache directory ($LOBATTO_CACHE_DIR, else
$XDG_CACHE_HOME/lobatto/cpu, else ~/.cache/lobatto/cpu) under a name holding a hash of the
source text, the flags, the compiler's identity and the host CPU (-march=native differs
between hosts sharing a home directory). Compilation writes a temporary file and renames it
into place, so several processes (MPI ranks) compiling the same library at once are safe.

Environment:
    CC                    compiler (default: cc, then gcc, then clang)
    LOBATTO_CFLAGS        replaces the optimisation flags (default below)
    LOBATTO_NO_CKERNELS   set to 1 to skip compilation (NumPy reference kernels)
    LOBATTO_CACHE_DIR     cache directory
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
import warnings
from pathlib import Path

OPT_FLAGS = ("-O3", "-march=native", "-fno-math-errno", "-ffp-contract=fast", "-std=gnu99")
BASE_FLAGS = ("-shared", "-fPIC")

_lock = threading.RLock()
_loaded: dict[tuple, ctypes.CDLL | None] = {}
_errors: dict[tuple, str] = {}
_toolchain: dict | None = None
_threads: int | None = None  # OpenMP threads asked for by set_num_threads (None: the default)
_warned = False


class BuildError(RuntimeError):
    pass


def disabled() -> bool:
    return os.environ.get("LOBATTO_NO_CKERNELS", "").strip() not in ("", "0", "false", "no")


def cache_dir() -> Path:
    env = os.environ.get("LOBATTO_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lobatto" / "cpu"


def _host_signature() -> str:
    """CPU model and feature flags, so -march=native builds are not shared across hosts."""
    try:
        with open("/proc/cpuinfo") as fh:
            lines = [ln for ln in fh if ln.startswith(("model name", "flags", "Features", "CPU part"))]
        return "".join(sorted(set(lines)))
    except OSError:
        import platform

        return platform.machine() + platform.processor()


def _compiler() -> list[str] | None:
    cc = os.environ.get("CC")
    if cc:
        argv = shlex.split(cc)
        return argv if argv and shutil.which(argv[0]) else None
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return [path]
    return None


def _run(argv, cwd=None, timeout=300):
    return subprocess.run(argv, check=False, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)


def toolchain() -> dict | None:
    """{'cc': argv, 'version': str, 'flags': [...], 'openmp': bool}, or None without a compiler."""
    global _toolchain
    with _lock:
        if _toolchain is not None:
            return _toolchain or None
        cc = _compiler()
        if cc is None:
            _toolchain = {}
            return None
        try:
            version = _run(cc + ["--version"], timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            _toolchain = {}
            return None
        env_flags = os.environ.get("LOBATTO_CFLAGS")
        flags = shlex.split(env_flags) if env_flags is not None else list(OPT_FLAGS)
        openmp = _openmp_works(cc, flags, version)
        _toolchain = {"cc": cc, "version": version, "flags": flags, "openmp": openmp}
        return _toolchain


def _openmp_works(cc, flags, version) -> bool:
    """Whether `cc -fopenmp` builds a shared library (result cached on disk per compiler)."""
    key = hashlib.sha256(("openmp\0" + " ".join(cc + flags) + "\0" + version).encode()).hexdigest()[:16]
    marker = cache_dir() / f"openmp-{key}"
    for suffix, answer in ((".yes", True), (".no", False)):
        if marker.with_suffix(suffix).exists():
            return answer
    src = "#include <omp.h>\nint lobatto_probe(void) { return omp_get_max_threads(); }\n"
    with tempfile.TemporaryDirectory() as tmp:
        c = Path(tmp) / "probe.c"
        c.write_text(src)
        try:
            ok = _run(cc + flags + list(BASE_FLAGS) + ["-fopenmp", str(c), "-o", str(Path(tmp) / "probe.so")],
                      timeout=120).returncode == 0
        except (OSError, subprocess.SubprocessError):
            ok = False
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
        marker.with_suffix(".yes" if ok else ".no").touch()
    except OSError:
        pass
    return ok


def available() -> bool:
    """True when C kernels can be compiled here (a compiler is found and not disabled)."""
    return not disabled() and toolchain() is not None


def _command(source, macros: dict) -> tuple[list[str], Path]:
    tc = toolchain()
    if tc is None:
        raise BuildError("no C compiler found (set CC, or install cc/gcc/clang)")
    src_path = Path(source)
    text = src_path.read_text()
    defines = [f"-D{k}={v}" for k, v in sorted(macros.items())]
    flags = tc["flags"] + list(BASE_FLAGS) + (["-fopenmp"] if tc["openmp"] else []) + defines
    digest = hashlib.sha256(
        "\0".join([text, " ".join(tc["cc"]), " ".join(flags), tc["version"], _host_signature()]).encode()
    ).hexdigest()[:20]
    tag = "_".join(f"{k.lower()}{v}" for k, v in sorted(macros.items()))
    out = cache_dir() / f"{src_path.stem}_{tag}_{digest}.so"
    return tc["cc"] + flags + [str(src_path), "-lm"], out


def _start(source, macros: dict):
    """(path, Popen or None, tmp path): start compiling unless the library is cached."""
    argv, out = _command(source, macros)
    if out.exists():
        return out, None, None
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
    os.close(fd)
    proc = subprocess.Popen(argv + ["-o", tmp], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return out, proc, tmp


def _finish(out: Path, proc, tmp) -> Path:
    if proc is None:
        return out
    try:
        log, _ = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        log = "compiler timed out"
    try:
        if proc.returncode != 0:
            raise BuildError(f"compiling {out.name} failed:\n{' '.join(map(str, proc.args))}\n{log}")
        os.replace(tmp, out)  # atomic: concurrent builders all rename complete files
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


def build(source, **macros) -> Path:
    """Path of the compiled library (compiling it if it is not cached)."""
    return _finish(*_start(source, macros))


def prebuild(specs) -> None:
    """Compile several (source, macros) libraries concurrently (errors are left for load())."""
    if disabled() or toolchain() is None:
        return
    running = []
    for source, macros in specs:
        try:
            running.append(_start(source, dict(macros)))
        except (OSError, BuildError):
            pass
    for item in running:
        try:
            _finish(*item)
        except (OSError, BuildError):
            pass


def load(source, **macros) -> ctypes.CDLL | None:
    """The loaded library of the C file at path ``source``, or None (with one warning per
    process) when it cannot be built."""
    global _warned
    key = (str(source), tuple(sorted(macros.items())))
    with _lock:
        if key in _loaded:
            return _loaded[key]
        lib = None
        if disabled():
            _errors[key] = "LOBATTO_NO_CKERNELS is set"
        else:
            try:
                lib = ctypes.CDLL(str(build(source, **macros)))
            except (OSError, BuildError, subprocess.SubprocessError) as exc:
                _errors[key] = str(exc)
                if not _warned:
                    _warned = True
                    warnings.warn(
                        f"lobatto: compiled CPU kernels unavailable, using the NumPy reference kernels ({exc})",
                        RuntimeWarning,
                        stacklevel=3,
                    )
        if lib is not None and _threads is not None and hasattr(lib, "lobatto_set_num_threads"):
            lib.lobatto_set_num_threads(int(_threads))
        _loaded[key] = lib
        return lib


def error(source, **macros) -> str | None:
    return _errors.get((str(source), tuple(sorted(macros.items()))))


def loaded_libraries():
    return [lib for lib in _loaded.values() if lib is not None]


# OpenMP threads ------------------------------------------------------------------------------
# Every kernel library that uses OpenMP exports lobatto_set_num_threads / lobatto_get_max_threads.


def set_num_threads(n: int | None) -> None:
    """OpenMP threads of every compiled library (None: back to OMP_NUM_THREADS / all cores)."""
    global _threads
    _threads = n
    if n is None:
        n = int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or (os.cpu_count() or 1)
    for lib in loaded_libraries():
        if hasattr(lib, "lobatto_set_num_threads"):
            lib.lobatto_set_num_threads(int(n))


def get_num_threads() -> int:
    for lib in loaded_libraries():
        if hasattr(lib, "lobatto_get_max_threads"):
            return int(lib.lobatto_get_max_threads())
    return 1


def pointer(a) -> int:
    """Address of a NumPy array's data, for a ctypes call."""
    return a.__array_interface__["data"][0]
