"""The package layers hold (pyproject.toml [tool.importlinter]), and a project module is imported
inside a function only to put off a heavy library (torch, gradio, transformers, plotly, the WebRTC
stack: aiortc, PyAV), never to dodge an import cycle; and the dialogue systems, the code researchers
extend, stay readable: no function of theirs over 60 lines."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("turntaking", "speech", "storage", "webguard", "jobs", "judge", "systems", "annotation", "studies",
            "naturalness", "predictorbench", "examiner", "analysis", "demo")
HEAVY = ("torch", "gradio", "transformers", "plotly", "aiortc", "av")


def test_the_import_contracts_are_kept():
    done = subprocess.run([str(Path(sys.executable).parent / "lint-imports"), "--no-cache"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def function_level_project_imports() -> dict[str, set[str]]:
    """{imported module: ["file:line", ...]} for every import of a project module in a function."""
    found: dict[str, list[str]] = {}
    for package in (*PACKAGES, "benchmarks"):
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text())
            for function in ast.walk(tree):
                if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for node in ast.walk(function):
                    if isinstance(node, ast.ImportFrom) and node.module:
                        modules = [node.module]
                    elif isinstance(node, ast.Import):
                        modules = [alias.name for alias in node.names]
                    else:
                        continue
                    for module in modules:
                        if module.split(".")[0] in PACKAGES:
                            where = f"{path.relative_to(ROOT)}:{node.lineno}"
                            found.setdefault(module, set()).add(where)  # nested functions are walked twice
    return found


# Imports `module` in a fresh interpreter and prints the heavy libraries it loads. The import of
# a heavy library is stopped where it starts (loading torch or gradio takes seconds, and whether
# one is reached is all the check asks): a BaseException, so no `except ImportError` swallows it.
HEAVY_PROBE = """
import importlib, importlib.abc, json, sys
HEAVY = {heavy!r}
class Reached(BaseException):
    pass
class StopAtHeavy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HEAVY:
            raise Reached(name.split(".")[0])
        return None
already = [h for h in HEAVY if h in sys.modules]
sys.meta_path.insert(0, StopAtHeavy())
try:
    importlib.import_module({module!r})
    print(json.dumps(already + [h for h in HEAVY if h in sys.modules and h not in already]))
except Reached as reached:
    print(json.dumps(already + [str(reached)]))
"""


def heavy_libraries_loaded_by(module: str) -> list[str]:
    """The heavy libraries importing `module` loads: none, or (at least) the first one it reaches."""
    code = HEAVY_PROBE.format(heavy=HEAVY, module=module)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_project_modules_are_imported_in_functions_only_to_defer_heavy_libraries():
    found = function_level_project_imports()
    assert found, "the scan found nothing: it no longer looks where the code is"
    with ThreadPoolExecutor(4) as pool:  # one interpreter each, a few at a time
        loads = dict(zip(found, pool.map(heavy_libraries_loaded_by, found)))
    light = {module: places for module, places in found.items() if not loads[module]}
    assert not light, f"import these at the top of the module (they load no heavy library): {light}"


def test_the_scan_sees_a_light_import_in_a_function(tmp_path):
    # The check above must be able to fail: a light module imported in a function is found.
    tree = ast.parse("def f():\n    from turntaking.events import detect_events\n")
    [node] = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert node.module == "turntaking.events" and heavy_libraries_loaded_by(node.module) == []
    # and a module that loads one is seen to: the probe stops at the heavy library's import
    assert heavy_libraries_loaded_by("judge.model") == ["torch"]


MOST_LINES = 60


def long_functions(folder: Path, most: int = MOST_LINES) -> list[str]:
    """"file:name (n lines)" of each function or method under `folder` longer than `most` lines."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > most:
                    found.append(f"{path.relative_to(folder.parent)}:{node.name} ({lines} lines)")
    return found


def test_no_function_of_the_dialogue_systems_is_over_60_lines(tmp_path):
    assert not long_functions(ROOT / "systems"), "split these into steps a reader can follow"
    # the check can fail: a 61-line function is found
    (tmp_path / "long.py").write_text("def f():\n" + "    x = 1\n" * 60)
    assert [name.split(":")[1] for name in long_functions(tmp_path)] == ["f (61 lines)"]
