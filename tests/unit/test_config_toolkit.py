"""The case-file toolkit (config/toolkit.py): each typed reader takes good values and refuses
bad ones with one line naming the file and ``[table] key``; an unknown key gets the nearest
declared name; every declared key of every table is listed in docs/case-file.md."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from lobatto.config.derived import FORMAT_TABLES
from lobatto.config.dft import DFT
from lobatto.config.generic_tables import GENERIC_TABLES, schema_keys
from lobatto.config.physics import Key
from lobatto.config.probes import INTEGRALS, PROBES
from lobatto.config.ranges import Range
from lobatto.config.toolkit import (REQUIRED, Context, Table, bool_or_auto, boolean, check_keys, choice, get_value,
                                    integer, key_value, name_list, positive, read_table, show, suggest, vector,
                                    within)
from lobatto.errors import InputError
from lobatto.monitors import monitor_tables
from lobatto.systems.maxwell.far_field_table import FAR_FIELD
from lobatto.systems.maxwell.pml import PML
from lobatto.systems.maxwell.ports import PORT, PORTS
from lobatto.systems.maxwell.sources import CURRENT, DIPOLE
from lobatto.systems.maxwell.tfsf import PLANE_WAVE
from lobatto.systems.navier_stokes.statistics_table import STATISTICS
from lobatto.systems.navier_stokes.forces_table import FORCES

ROOT = Path(__file__).resolve().parents[2]
FILE = "case.toml"


@pytest.fixture
def ctx():
    return Context(FILE, {"": ("solver", "output"), "solver": ("order", "tolerance", "smoother"),
                          "output": ("every", "name")})


def refused(call, *fragments):
    """The InputError of ``call``: one line that starts with the file and holds every fragment."""
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    assert message.startswith(f"{FILE}: ") and "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


def test_context_errors_name_the_file_and_the_key(ctx):
    assert str(ctx.error("boom")) == f"{FILE}: boom"
    assert str(ctx.bad("solver", "order", "an integer", "x", "why")) == \
        f'{FILE}: [solver] order must be an integer, got "x" (why)'


def test_show_writes_values_as_toml():
    assert show(True) == "true" and show(1.0) == "1.0" and show("a") == '"a"' and show([1, "b"]) == '[1, "b"]'
    assert show({"a": 1}) == "a table" and show(math.inf) == "inf"
    assert len(show("x" * 100)) == 60 and show("x" * 100).endswith("...")


def test_unknown_keys_get_the_nearest_name(ctx):
    check_keys(ctx, "solver", {"order": 3, "tolerance": 1e-8})
    refused(lambda: check_keys(ctx, "solver", {"tolerence": 1e-8}), "unknown key 'solver.tolerence'",
            "(did you mean 'solver.tolerance'?)")
    refused(lambda: check_keys(ctx, "solver", {"ORDER": 3}), "(did you mean 'solver.order'?)")
    # a key of another table
    refused(lambda: check_keys(ctx, "", {"every": 3}), "unknown key 'every'", "(did you mean 'output.every'?)")
    # nothing near: the valid keys
    refused(lambda: check_keys(ctx, "solver", {"zzz": 1}), "(valid keys in [solver]: order, tolerance, smoother)")
    assert suggest(ctx.keys, "", "qqq") == " (valid keys in the top level: solver, output)"


def test_declared_tables_check_their_keys(ctx):
    table = Table("solver", (Key("order", "positive_integer", 3, "order", range=Range(1, 9, "why")),
                             Key("tolerance", "positive", 1e-8, "tolerance")))
    assert table.key_names == ("order", "tolerance") and table["order"].default == 3
    with pytest.raises(KeyError):
        table["nope"]
    table.check(ctx, {"order": 2})
    refused(lambda: table.check(ctx, {"ordr": 2}), "unknown key 'solver.ordr'", "did you mean 'solver.order'?")
    refused(lambda: table.check(ctx, {"tolerance": 1.0}, where="solver.a", only=("order",)),
            "unknown key 'solver.a.tolerance'")
    assert key_value(ctx, "solver", {}, table["order"]) == 3
    refused(lambda: key_value(ctx, "solver", {"order": 10}, table["order"]),
            "[solver] order must be an integer from 1 to 9 (why), got 10")


def test_the_catalogue_of_known_keys_comes_from_the_declarations():
    keys = schema_keys(None)
    for table in GENERIC_TABLES:
        assert keys[table.name] == table.key_names, table.name


def test_read_table(ctx):
    assert read_table(ctx, {"solver": {"order": 3}}, "", "solver") == {"order": 3}
    assert read_table(ctx, {}, "", "solver") is None
    refused(lambda: read_table(ctx, {}, "", "solver", required=True), "missing required section [solver]")
    refused(lambda: read_table(ctx, {"solver": 3}, "", "solver"), "[solver] must be a table", "got 3")
    refused(lambda: read_table(ctx, {"solver": {"odrer": 3}}, "", "solver"), "unknown key 'solver.odrer'",
            "did you mean 'solver.order'?")


def test_get_value_and_required(ctx):
    assert get_value(ctx, "solver", {"order": 3}, "order", 1) == 3
    assert get_value(ctx, "solver", {}, "order", 1) == 1
    refused(lambda: get_value(ctx, "solver", {}, "order", REQUIRED, " (for example order = 3)"),
            "[solver] order is required (for example order = 3)")


def test_choice(ctx):
    assert choice(ctx, "solver", {"smoother": "jacobi"}, "smoother", ("jacobi", "chebyshev"), "jacobi") == "jacobi"
    assert choice(ctx, "solver", {}, "smoother", ("jacobi", "chebyshev"), "chebyshev") == "chebyshev"
    refused(lambda: choice(ctx, "solver", {"smoother": "chebychev"}, "smoother", ("jacobi", "chebyshev"), "jacobi"),
            '[solver] smoother must be one of "jacobi", "chebyshev", got "chebychev" (did you mean "chebyshev"?)')
    refused(lambda: choice(ctx, "solver", {"smoother": 3}, "smoother", ("jacobi",), "jacobi"),
            '[solver] smoother must be "jacobi" (the only supported value), got 3')


def test_booleans(ctx):
    assert boolean(ctx, "output", {"name": False}, "name", True) is False
    refused(lambda: boolean(ctx, "output", {"name": "yes"}, "name", True), "[output] name must be true or false",
            'got "yes"')
    assert bool_or_auto(ctx, "output", {}, "name", "auto") == "auto"
    assert bool_or_auto(ctx, "output", {"name": True}, "name", "auto") is True
    refused(lambda: bool_or_auto(ctx, "output", {"name": "sometimes"}, "name", "auto"),
            '[output] name must be true, false or "auto", got "sometimes"')


def test_integer(ctx):
    assert integer(ctx, "solver", {"order": 3}, "order", 1, 1, 24) == 3
    refused(lambda: integer(ctx, "solver", {"order": 0}, "order", 1, 1, 24),
            "[solver] order must be an integer from 1 to 24, got 0")
    refused(lambda: integer(ctx, "solver", {"order": 2.0}, "order", 1, 1), "must be an integer >= 1, got 2.0")
    refused(lambda: integer(ctx, "solver", {"order": True}, "order", 1), "must be an integer, got true")
    # the declared range of a generic key (config/ranges.py SECTION_RANGES)
    refused(lambda: integer(ctx, "output", {"every": 10**10}, "every", 0, 0),
            "[output] every must be an integer from 0 to 1e+09 (a number of steps", "got 10000000000")


def test_positive(ctx):
    assert positive(ctx, "solver", {"tolerance": 1}, "tolerance", None) == 1.0
    assert positive(ctx, "solver", {}, "tolerance", None) is None
    for bad in (0, -1.0, math.nan, math.inf, "1"):
        refused(lambda: positive(ctx, "solver", {"tolerance": bad}, "tolerance", None),
                "[solver] tolerance must be a positive number")
    refused(lambda: positive(ctx, "time", {"cfl": 1000.0}, "cfl", None), "[time] cfl must be a number > 0 and <= 100",
            "got 1000.0")
    assert within(ctx, "time", "cfl", 0.5, "a number") == 0.5


def test_vector(ctx):
    assert vector(ctx, "mesh", {"elements": [1, 2, 3]}, "elements", REQUIRED, "posint") == (1, 2, 3)
    assert vector(ctx, "mesh", {}, "lower", [0, 0, 0], "float") == (0.0, 0.0, 0.0)
    assert vector(ctx, "mesh", {"periodic": [True, False, True]}, "periodic", None, "bool") == (True, False, True)
    refused(lambda: vector(ctx, "mesh", {"elements": [1, 0, 3]}, "elements", REQUIRED, "posint"),
            "[mesh] elements must be a list of 3 positive integers, got [1, 0, 3]")
    refused(lambda: vector(ctx, "mesh", {"lower": [0, 0]}, "lower", None, "float"),
            "[mesh] lower must be a list of 3 finite numbers, got [0, 0]")
    refused(lambda: vector(ctx, "mesh", {"lower": [0, 0, 1e200]}, "lower", None, "float"),
            "[mesh] lower must be a list of 3 finite numbers from -1e+100 to 1e+100", "got [0, 0, 1e+200]")
    refused(lambda: vector(ctx, "mesh", {"periodic": [1, 0, 0]}, "periodic", None, "bool"),
            "[mesh] periodic must be a list of 3 booleans")
    refused(lambda: vector(ctx, "mesh", {}, "elements", REQUIRED, "posint", " (for example elements = [4, 4, 4])"),
            "[mesh] elements is required (for example elements = [4, 4, 4])")


def test_name_list(ctx):
    fields = ("Ex", "Ey")
    assert name_list(ctx, "output.probes", {"fields": ["Ey", "Ex"]}, "fields", fields, "field", []) == ["Ey", "Ex"]
    # a name given twice is refused, not merged (a surface listed twice reads as counted twice)
    refused(lambda: name_list(ctx, "output.probes", {"fields": ["Ey", "Ex", "Ey"]}, "fields", fields, "field", []),
            '[output.probes] fields: "Ey" is given 2 times; list each once')
    assert name_list(ctx, "output.probes", {}, "fields", None, "region", ["all"]) == ["all"]
    refused(lambda: name_list(ctx, "output.probes", {"fields": "Ex"}, "fields", fields, "field", []),
            "[output.probes] fields must be a list of names")
    refused(lambda: name_list(ctx, "output.probes", {"fields": ["Ez"]}, "fields", fields, "field", []),
            "[output.probes] fields: unknown field \"Ez\" (did you mean 'Ey'? expected one of Ex, Ey)")
    refused(lambda: name_list(ctx, "output.integrals", {"volume": ["flux"]}, "volume", ("energy",), "integrand", [],
                              other=(("flux",), "surface")),
            "'flux' is a surface integrand: list it in [output.integrals] surface")


def test_key_value_by_kind(ctx):
    assert key_value(ctx, "solver", {"order": 2.5}, Key("order", "number", 1.0, "x")) == 2.5
    refused(lambda: key_value(ctx, "solver", {"order": -1}, Key("order", "nonnegative", 0.0, "x")),
            "[solver] order must be a number >= 0, got -1")
    assert key_value(ctx, "solver", {}, Key("order", "orders", [3, 1], "x")) == (3, 1)
    refused(lambda: key_value(ctx, "solver", {"order": [1, 3]}, Key("order", "orders", [3, 1], "x")),
            "[solver] order must be a list of decreasing orders")
    refused(lambda: key_value(ctx, "solver", {"order": ["a", "a"]}, Key("order", "names", [], "x")),
            "'a' is named twice")
    expression = key_value(ctx, "solver", {"order": "2*x"}, Key("order", "expression", "0", "x"))
    assert expression.text == "2*x"
    refused(lambda: key_value(ctx, "solver", {"order": "1e200"}, Key("order", "expression", "0", "x")),
            '[solver] order = "1e200" is 1e+200; its values must be')
    # a vector: 3 numbers within the range, None when absent without a default ([physics] bloch_k)
    assert key_value(ctx, "solver", {}, Key("order", "vector", None, "x")) is None
    assert key_value(ctx, "solver", {"order": [1, 2, 3.5]}, Key("order", "vector", None, "x")) == (1.0, 2.0, 3.5)
    refused(lambda: key_value(ctx, "solver", {"order": [1, 2]}, Key("order", "vector", None, "x")),
            "[solver] order must be a list of 3 finite numbers")
    with pytest.raises(ValueError, match="its table's own reader"):
        key_value(ctx, "solver", {}, Key("order", "list", None, "x"))


# ------------------------------------------------------------------- docs/case-file.md
def doc_sections() -> dict:
    """{heading's table ("[mesh]"): its text up to the next heading} of docs/case-file.md."""
    text = (ROOT / "docs" / "case-file.md").read_text(encoding="utf-8")
    out = {}
    for part in re.split(r"^#{2,3} ", text, flags=re.M):
        match = re.match(r"`(\[[^\]]+\])`", part)
        if match:
            out[match.group(1)] = part
    return out


#: (table, the heading of docs/case-file.md whose section lists its keys, and the text there
#: from which up to which it lists them: None for the whole section)
DOCUMENTED = [(table, f"[{table.name}]", None, None) for table in GENERIC_TABLES[1:]
              if not table.name.startswith(("output.probes", "output.integrals", "output.dft", "output.hdf5",
                                            "output.nek", "output.vtk"))] + [
    (PROBES, "[output]", "`[output.probes]`", "`[output.integrals]`"),
    (INTEGRALS, "[output]", "`[output.integrals]`", "`[output.dft]`"),
    (DFT, "[output]", "`[output.dft]`", "electromagnetics.md"),
    *((table, "[output]", "`[output.hdf5]`", "`[output.probes]`") for table in FORMAT_TABLES),
    (CURRENT, "[physics]", "Maxwell sources are", "A key that the waveform does not take"),
    (DIPOLE, "[physics]", "Maxwell sources are", "A key that the waveform does not take"),
    (PLANE_WAVE, "[physics]", "A plane wave is", "Dispersive media"),
    (PML, "[pml]", None, None),
    (PORT, "[port.<name>]", None, None),  # waveguide ports (systems/maxwell/ports.py)
    (PORTS, "[ports]", None, None),
    (FAR_FIELD, "[output.far_field]", None, None),  # the far-field monitor's own table
    (STATISTICS, "[output.statistics]", None, None),  # Navier-Stokes' statistics monitor
    (FORCES, "[output.forces.<name>]", None, None),  # the Navier-Stokes forces' table, one per named group
]


def test_the_docs_have_a_section_per_top_level_table():
    sections = doc_sections()
    assert GENERIC_TABLES[0].name == ""
    for key in GENERIC_TABLES[0].keys:
        assert f"[{key.name}]" in sections, key.name


def test_every_declared_table_is_checked_against_the_docs():
    import lobatto.systems.registry  # noqa: F401  (the systems register their monitors when imported)

    checked = {id(table) for table, *_ in DOCUMENTED}
    assert all(id(table) in checked for table in GENERIC_TABLES[1:])
    assert monitor_tables() and all(id(table) in checked for table in monitor_tables().values())


@pytest.mark.parametrize("table,heading,start,end", DOCUMENTED,
                         ids=[f"[{t.name}]-{len(t.keys)}" for t, *_ in DOCUMENTED])
def test_the_docs_list_every_declared_key(table, heading, start, end):
    sections = doc_sections()
    assert heading in sections, heading
    text = sections[heading]
    if start is not None:
        text = text[text.index(start):]
        text = text[:text.index(end)]
    everywhere = "".join(sections.values())
    for key in table.keys:
        listed = f"`{key.name}`" in text or f"`{key.name} =" in text
        if key.kind == "table":  # a subtable: documented under its own name
            listed = listed or f"`[{table.name}.{key.name}]`" in everywhere
        assert listed, f"docs/case-file.md, {heading}: [{table.name}] {key.name} is not listed"


# ------------------------------------------------------------------- the package's shape
def config_imports() -> dict:
    """{module: [(imported module, names), ...]} of config/ and Maxwell's table readers, every
    import statement (function-level ones too)."""
    import ast

    files = sorted((ROOT / "src" / "lobatto" / "config").glob("*.py")) + [
        ROOT / "src" / "lobatto" / "systems" / "maxwell" / f"{name}.py" for name in ("sources", "tfsf", "pml")]
    out = {}
    for path in files:
        module = ".".join(path.relative_to(ROOT / "src").with_suffix("").parts)
        found = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lobatto."):
                found.append((node.module, [alias.name for alias in node.names]))
            elif isinstance(node, ast.Import):
                found += [(alias.name, []) for alias in node.names if alias.name.startswith("lobatto.")]
        out[module] = found
    return out


def test_no_private_names_are_imported_across_modules():
    private = [f"{module} takes {name} from {source}" for module, imports in config_imports().items()
               for source, names in imports for name in names if name.startswith("_")]
    assert not private, private


def test_the_config_modules_import_each_other_as_a_tree():
    graph = {module: {source for source, _ in imports if source.startswith("lobatto.config.")}
             for module, imports in config_imports().items() if module.startswith("lobatto.config.")}
    done, path = set(), []

    def visit(module):
        assert module not in path, "import cycle: " + " -> ".join(path[path.index(module):] + [module])
        if module in done:
            return
        path.append(module)
        for target in graph.get(module, ()):
            visit(target)
        path.pop()
        done.add(module)

    for module in graph:
        visit(module)
