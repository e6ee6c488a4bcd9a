"""The newcomer's documents stay complete and current: every package in the README's Layout table, every stage of
build() and every frontend module in docs/architecture.md, and no module named there that is gone."""
import ast
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "ethosu_tvm"


def test_layout_table_lists_every_package():
    readme = ROOT / "README.md"
    layout = readme.read_text().split("## Layout", 1)[1].split("\n## ", 1)[0]
    packages = sorted(str(init.parent.relative_to(ROOT)) + "/" for init in PACKAGE.rglob("__init__.py"))
    assert len(packages) > 20
    assert [p for p in packages if f"| `{p}` |" not in layout] == []


def test_layout_rows_name_only_what_exists():
    """Each name a package's row of the README's Layout table gives is a module of that package or a name in one."""
    layout = (ROOT / "README.md").read_text().split("## Layout", 1)[1].split("\n## ", 1)[0]
    checked, missing = 0, []
    for path, text in re.findall(r"^\| `python/(ethosu_tvm/[\w/]*)/` \|(.*)$", layout, re.M):
        package = ROOT / "python" / path
        modules = [importlib.import_module(path.replace("/", "."))]
        modules += [importlib.import_module(f"{path.replace('/', '.')}.{module.stem}")
                    for module in package.glob("*.py") if module.stem != "__init__"]
        for name in re.findall(r"`([a-z_][a-z0-9_]*)`", text):
            checked += 1
            if not ((package / f"{name}.py").exists() or (package / name).is_dir()
                    or any(hasattr(module, name) for module in modules)):
                missing.append(f"{path}: {name}")
    assert checked >= 8
    assert missing == []


def test_architecture_names_every_stage_of_build():
    """Each function build() calls, itself or through its private helpers, is named in docs/architecture.md."""
    tree = ast.parse((PACKAGE / "build_module.py").read_text())
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)
                 and node.name in ("build", "_partition", "_npu_graphs")]
    called = {node.func.id for function in functions for node in ast.walk(function)
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    stages = {name for name in called if not name.startswith("_")} - {"report", "BuildError", "dict", "list", "len"}
    doc = (ROOT / "docs" / "architecture.md").read_text()
    assert len(stages) >= 10
    assert sorted(s for s in stages if f"`{s}`" not in doc) == []


def test_build_docstring_numbers_the_stages_as_architecture_does():
    """build_module's list of stages and docs/architecture.md's stage table give each number the same stage and
    function."""
    docstring = ast.get_docstring(ast.parse((PACKAGE / "build_module.py").read_text()))
    listed = {number: (stage, function) for number, stage, function
              in re.findall(r"^(\d+a?)\. ([\w ]+) \(`(\w+)`", docstring, re.M)}
    doc = (ROOT / "docs" / "architecture.md").read_text()
    table = {number: (stage, function) for number, stage, function
             in re.findall(r"^\| (\d+a?) \| ([\w ]+) \| `(\w+)`", doc, re.M)}
    assert len(table) >= 12
    assert listed == table


def test_architecture_names_every_frontend_module():
    """The frontend's section says what each of its modules is for, and the README's Layout row names only modules
    that exist."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc.split("Frontend (`frontend/`)\n", 1)[1].split("\n### ", 1)[0]
    modules = sorted(path.stem for path in (PACKAGE / "frontend").glob("*.py") if path.stem != "__init__")
    assert len(modules) > 15
    assert [m for m in modules if f"`{m}`" not in section and f"`{m}." not in section] == []
    layout = (ROOT / "README.md").read_text().split("| `python/ethosu_tvm/frontend/` |", 1)[1].split("\n", 1)[0]
    named = re.findall(r"`([a-z_]+)`", layout)
    assert len(named) >= 5
    assert [m for m in named if m not in modules and m != "from_tflite"] == []


def test_architecture_names_only_modules_that_exist():
    """Each dotted name of the package in docs/architecture.md (`partition.npu_view`, `codegen.artifact.x`) is a
    module of it, or a name in one."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    tops = {path.stem for path in PACKAGE.iterdir() if path.suffix == ".py" or (path / "__init__.py").exists()}
    names = {name for name in re.findall(r"`([a-z_]+(?:\.\w+)+)`", doc) if name.split(".")[0] in tops}
    assert len(names) > 40
    assert sorted(name for name in names if not _resolves(name)) == []


def _resolves(name: str) -> bool:
    """Whether `name` is a module of the package, or an attribute (path) of its longest module prefix."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(f"ethosu_tvm.{'.'.join(parts[:cut])}")
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute, None)
        return found is not None
    return False
