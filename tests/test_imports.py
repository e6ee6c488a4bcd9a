"""The package's modules import each other without cycles (imports inside functions count: they only defer one),
and no module imports another's private (underscore) name: what two modules share is a public name of one."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "ethosu_tvm"


def _modules() -> dict[str, Path]:
    """Dotted module name → file, packages by their __init__.py."""
    result = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        result[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return result


def _imports(name: str, path: Path) -> list[tuple[ast.AST, str, list[str]]]:
    """Every import statement of the module: (node, the absolute module it names, the names it takes from it)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found.append((node, target, [alias.name for alias in node.names]))
    return found


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the package modules it imports. `from p import m` imports module p.m when there is one; a module's
    own enclosing packages are left out (Python has begun importing them before it)."""
    graph = {}
    for name, path in modules.items():
        edges = set()
        for _, target, names in _imports(name, path):
            for candidate in [target] + [f"{target}.{n}" for n in names]:
                if candidate in modules and candidate != name and not name.startswith(candidate + "."):
                    edges.add(candidate)
        graph[name] = edges
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle (its modules, the first repeated at the end), or [] when there is none."""
    done, path = set(), []

    def visit(module: str) -> list[str]:
        if module in path:
            return path[path.index(module):] + [module]
        if module in done:
            return []
        path.append(module)
        for target in sorted(graph[module]):
            cycle = visit(target)
            if cycle:
                return cycle
        path.pop()
        done.add(module)
        return []

    for module in sorted(graph):
        cycle = visit(module)
        if cycle:
            return cycle
    return []


def test_cycle_finder_sees_a_cycle_through_a_function_level_import(tmp_path):
    """The check itself: an import inside a function is an edge, and a cycle is found with its path."""
    (tmp_path / "a.py").write_text("def f():\n    from .b import _g, h\n")
    assert [(target, names) for _, target, names in _imports("pkg.a", tmp_path / "a.py")] == [("pkg.b", ["_g", "h"])]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_no_import_cycle_between_modules():
    modules = _modules()
    graph = _graph(modules)
    assert len(graph) > 150
    assert sum(map(len, graph.values())) > 300
    assert _cycle(graph) == []


def test_no_private_name_imported_from_another_module():
    private = [f"{path.relative_to(PACKAGE.parent)}:{node.lineno} from {target} import {n}"
               for name, path in _modules().items() for node, target, names in _imports(name, path)
               for n in names if n.startswith("_") and not n.startswith("__")]
    assert private == []
