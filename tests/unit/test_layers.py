"""The layering of lobatto, read statically from its import statements (docs/architecture.md).

Every module of src/lobatto is given a layer; a module may import from its own layer or a
lower one, never from a higher one. Systems share code only through ``systems.base``,
``systems.dg`` and ``systems.registry``, and only the registry imports individual systems.
System names (maxwell, acoustics) appear only under systems/ (and the layers above it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SRC = ROOT / "src"
PACKAGE = SRC / "lobatto"

#: layer of each package or module, lowest first; a module takes the layer of its longest
#: listed prefix. A new package must be placed here deliberately.
LAYERS = {
    # 0: foundations and run-time compilers
    "lobatto.errors": 0,
    "lobatto.discretization": 0,
    "lobatto.jit": 0,
    "lobatto.machine.threads": 0,  # thread wait policy and count, set before NumPy loads
    # 1: mesh, case files, the machine (MPI, memory, energy), input/output
    "lobatto.mesh": 1,
    "lobatto.config": 1,
    "lobatto.machine": 1,
    "lobatto.io": 1,
    "lobatto.analysis": 1,  # after-the-fact analysis of outputs (resonances): NumPy and io only
    # 2: gather-scatter and transports
    "lobatto.comm": 2,
    # 3: arrays, kernel registry, graph capture
    "lobatto.backends": 3,
    # 4: physics-free operators and solvers
    "lobatto.operators": 4,
    "lobatto.solvers": 4,
    # 5: monitors: the contract and the generic ones (a system registers its own, as it does kernels)
    "lobatto.monitors": 5,
    # 6: physical systems
    "lobatto.systems": 6,
    # 7: time integration
    "lobatto.integrators": 7,
    # 8: one run of a case
    "lobatto.runner": 8,
    # 9: the Python API
    "lobatto.api": 9,
    # 10: entry points
    "lobatto.cli": 10,
    "lobatto.bench": 10,
    "lobatto.__main__": 10,
}
#: the package root: its lazy __getattr__ imports lobatto.api, so it sits on top; only
#: ``from lobatto import __version__`` may be used below it.
ROOT_MODULE, ROOT_LAYER = "lobatto", 10
ALLOWED_FROM_ROOT = {"__version__"}

#: modules of lobatto.systems that are not a system of their own
SHARED_SYSTEM_MODULES = {"base", "dg", "registry"}
#: the only module of lobatto.systems allowed to import individual systems
SYSTEM_REGISTRY = "lobatto.systems.registry"

#: where system names must not appear (acceptance: grep -ril maxwell ... finds nothing)
PHYSICS_FREE = ("analysis", "backends", "comm", "config", "io", "machine", "mesh", "monitors", "integrators",
                "operators", "solvers", "jit", "discretization", "runner")
SYSTEM_WORDS = ("maxwell", "acoustics", "poisson")
#: files of those layers that may name systems: the memory model quotes each system's array counts
PHYSICS_FREE_EXCEPT = ("machine/resources.py",)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}


MODULES = _modules()


def layer_of(module: str) -> int | None:
    if module == ROOT_MODULE:
        return ROOT_LAYER
    best = None
    for prefix, layer in LAYERS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, layer)
    return None if best is None else best[1]


def _is_lobatto(name: str) -> bool:
    return name == ROOT_MODULE or name.startswith(ROOT_MODULE + ".")


def _resolve_relative(module: str, path: Path, level: int, name: str | None) -> str:
    """The absolute module of ``from <level dots><name> import ...`` in ``module``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    parts = package.split(".")
    if level - 1 > len(parts) - 1:
        raise AssertionError(f"{path}: relative import beyond the top-level package")
    base = ".".join(parts[: len(parts) - (level - 1)])
    return f"{base}.{name}" if name else base


def imports_of(module: str, path: Path) -> list[tuple[str, int]]:
    """(imported lobatto module, line) for every import in ``path``: top level, inside
    functions and classes, relative ones, and ``importlib.import_module("lobatto...")``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names if _is_lobatto(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = _resolve_relative(module, path, node.level, node.module)
            if not _is_lobatto(base):
                continue
            for alias in node.names:
                if base == ROOT_MODULE and alias.name in ALLOWED_FROM_ROOT:
                    continue
                candidate = f"{base}.{alias.name}"
                # `from pkg import submodule` imports the submodule; `from mod import name` the module
                found.append((candidate if candidate in MODULES else base, node.lineno))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            target = node.args[0].value
            if called in ("import_module", "__import__") and isinstance(target, str) and _is_lobatto(target):
                found.append((target, node.lineno))
    return found


def _system_of(module: str) -> str | None:
    """The individual system ``module`` belongs to (lobatto.systems.<name>...), else None."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[:2] == ["lobatto", "systems"] and parts[2] not in SHARED_SYSTEM_MODULES:
        return parts[2]
    return None


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def test_every_module_has_a_layer():
    assert MODULES, f"no modules found under {PACKAGE}"
    missing = sorted(m for m in MODULES if layer_of(m) is None)
    assert not missing, (
        "modules with no layer (place them in LAYERS of tests/unit/test_layers.py and in "
        "docs/architecture.md): " + ", ".join(f"{m} ({MODULES[m].relative_to(ROOT)})" for m in missing)
    )


def test_imports_only_go_down():
    offending, unassigned = [], []
    for module, path in MODULES.items():
        own = layer_of(module)
        if own is None:
            continue  # reported by test_every_module_has_a_layer
        for target, line in imports_of(module, path):
            layer = layer_of(target)
            if layer is None:
                unassigned.append(f"{module} imports {target}, which has no layer  [{_where(path, line)}]")
            elif layer > own:
                offending.append(f"{module} ({own}) imports {target} ({layer})  [{_where(path, line)}]")
    problems = offending + unassigned
    assert not problems, "imports from a higher layer:\n  " + "\n  ".join(problems)


def test_systems_do_not_import_each_other():
    offending = []
    for module, path in MODULES.items():
        if not module.startswith("lobatto.systems") or module == SYSTEM_REGISTRY:
            continue
        own = _system_of(module)
        for target, line in imports_of(module, path):
            other = _system_of(target)
            if other is not None and other != own:
                who = f"system {own}" if own else "a shared module"
                offending.append(f"{module} ({who}) imports {target} (system {other})  [{_where(path, line)}]")
    assert not offending, (
        "systems share code only through lobatto.systems.{base,dg,registry}, and only the registry "
        "imports individual systems:\n  " + "\n  ".join(offending)
    )


def _physics_free_files() -> list[Path]:
    files = []
    for name in PHYSICS_FREE:
        target = PACKAGE / name
        if target.is_file():
            files.append(target)
        elif target.is_dir():
            files += [p for p in sorted(target.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    return [p for p in files if p.relative_to(PACKAGE).as_posix() not in PHYSICS_FREE_EXCEPT]


def test_system_names_only_under_systems():
    files = _physics_free_files()
    assert files, "no files found to check"
    hits = []
    for path in files:
        text = path.read_bytes().decode("utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            lowered = line.lower()
            for word in SYSTEM_WORDS:
                if word in lowered:
                    hits.append(f"{_where(path, number)}: {word!r}: {line.strip()}")
    assert not hits, "system names outside lobatto/systems:\n  " + "\n  ".join(hits)


@pytest.mark.parametrize(
    "module, target, allowed",
    [
        ("lobatto.comm.local", "lobatto.jit.c", True),
        ("lobatto.mesh.box", "lobatto.config.schema", True),  # peers in one layer
        ("lobatto.backends.base", "lobatto.systems.dg", False),
        ("lobatto.systems.dg", "lobatto.integrators.stepper", False),
        ("lobatto.jit.c", "lobatto", False),  # the root holds the API: top layer
    ],
)
def test_layer_table(module, target, allowed):
    """The table itself: a few edges that must stay allowed or forbidden."""
    assert (layer_of(target) <= layer_of(module)) is allowed


# --- the house rules: no cycles, no private names across modules, a small root, small modules ---

#: what the package root may hold besides subpackages (docs/architecture.md)
ROOT_FILES = {"__init__.py", "__main__.py", "api.py", "cli.py", "errors.py"}
#: a module longer than this is split along its seams (kernel sources are .cu/.c files, not counted)
MAX_MODULE_LINES = 500


def _reexports(init: str) -> dict[str, str]:
    """name -> module for the ``from lobatto.x import name`` re-exports of a package __init__."""
    found = {}
    tree = ast.parse(MODULES[init].read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and not node.level and node.module and _is_lobatto(node.module):
            for alias in node.names:
                found[alias.asname or alias.name] = node.module
    return found


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def import_edges() -> dict[str, set[str]]:
    """module -> the lobatto modules it imports, a package's re-exported name resolved to the
    module that defines it (so `from pkg import Name` depends on pkg.child, not on pkg)."""
    edges = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module in MODULES \
                    and _is_package(node.module):
                table = _reexports(node.module) if node.module != module else {}
                for alias in node.names:
                    if node.module == ROOT_MODULE and alias.name in ALLOWED_FROM_ROOT:
                        continue
                    child = f"{node.module}.{alias.name}"
                    target = child if child in MODULES else table.get(alias.name, node.module)
                    if target in MODULES and target != module:
                        edges[module].add(target)
        for target, _ in imports_of(module, path):
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != module and not (_is_package(target) and module.startswith(target + ".")):
                edges[module].add(target)
    return edges


def import_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, cycles, counter = {}, {}, set(), [], [], [0]
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_import_cycles():
    cycles = import_cycles(import_edges())
    assert not cycles, ("import cycles (split or merge the modules so that imports form a tree):\n  "
                        + "\n  ".join(" <-> ".join(c) for c in cycles))


def private_imports(module: str, path: Path, where=None) -> list[str]:
    """Uses of another module's underscore names: ``from lobatto.x import _name`` and
    ``x._name`` where ``x`` is bound to a lobatto module by an import."""
    found, bound = [], {}
    where = where or (lambda line: _where(path, line))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_lobatto(alias.name) and alias.asname:
                    bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_relative(module, path, node.level, node.module) if node.level else (node.module or "")
            if not _is_lobatto(base) or base == module:
                continue
            for alias in node.names:
                if f"{base}.{alias.name}" in MODULES:
                    bound[alias.asname or alias.name] = f"{base}.{alias.name}"
                elif alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{module} takes {alias.name} from {base}  [{where(node.lineno)}]")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                and node.attr.startswith("_") and not node.attr.startswith("__") and bound[node.value.id] != module):
            found.append(f"{module} uses {bound[node.value.id]}.{node.attr}  [{where(node.lineno)}]")
    return found


def test_no_private_names_across_modules():
    found = [line for module, path in MODULES.items() for line in private_imports(module, path)]
    assert not found, ("underscore-private names taken from another module (make the name public and "
                       "document it, or keep the code in one module):\n  " + "\n  ".join(found))


def test_package_root_holds_only_the_entry_points():
    extra = sorted(p.name for p in PACKAGE.iterdir()
                   if p.is_file() and p.suffix == ".py" and p.name not in ROOT_FILES)
    assert not extra, f"modules at the package root (move them into a subpackage): {extra}"


def test_no_module_is_too_long():
    long = sorted((sum(1 for _ in path.open(encoding="utf-8")), module) for module, path in MODULES.items())
    long = [f"{module}: {lines} lines" for lines, module in long if lines > MAX_MODULE_LINES]
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them along their seams):\n  " + "\n  ".join(long)


def test_the_house_checks_can_fail(tmp_path):
    """The cycle finder and the private-name check catch what they are for (on made-up input)."""
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []
    fake = tmp_path / "fake.py"
    fake.write_text("from lobatto.errors import _hidden\nimport lobatto.jit.c as c\nc._secret()\n")
    found = private_imports("lobatto.fake", fake, where=str)
    assert len(found) == 2 and "_hidden" in found[0] and "lobatto.jit.c._secret" in found[1]
