"""The code-style rules the project keeps (README, "Code we want to live in") hold for every source file: lines fit
120 columns, and each package module stays under 500 lines, so a module keeps one job."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(path for folder in ("python", "tests", "benchmarks", "tutorials", "src")
                 for pattern in ("*.py", "*.c", "*.h") for path in (ROOT / folder).rglob(pattern)) + [ROOT / "setup.py"]


def test_lines_fit_120_columns():
    long = {f"{path.relative_to(ROOT)}:{number}" for path in SOURCES
            for number, line in enumerate(path.read_text().splitlines(), 1) if len(line) > 120}
    assert long == set()


def test_package_modules_stay_under_500_lines():
    sizes = {str(path.relative_to(ROOT)): len(path.read_text().splitlines())
             for path in (ROOT / "python").rglob("*.py")}
    assert {path: size for path, size in sizes.items() if size >= 500} == {}
