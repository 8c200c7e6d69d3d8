"""Imports only point down the layers: planning, problems, embedding, learning, search, method, experiments.

Each layer's `config.py` holds the config sections it owns; `statecentric_jax/config.py` composes them and
sits under the method's workflow (aggregation, evaluation, pipeline), which validates and resumes whole runs.
`cli` (the launchers' glue, also of the sweep's worker process) knows the search's names for its flags.
Modules with no layer (errors, atomic writes, config sections, devices, padding) import no layer; the package
top level (the public API) may import any.
"""

import ast
import pathlib

import statecentric_jax

PACKAGE = pathlib.Path(statecentric_jax.__file__).parent
LAYERS = (
    "planning",
    "problems",
    "embedding",
    "learning",
    "search",
    "method.config",
    "config",
    "method",
    "cli",
    "experiments",
)


def _rank(module: str) -> int:
    """A module's height: -1 for a module of no layer, len(LAYERS) for the top."""
    if module == "statecentric_jax":
        return len(LAYERS)
    name = module.removeprefix("statecentric_jax.")
    layers = [layer for layer in LAYERS if name == layer or name.startswith(layer + ".")]
    return LAYERS.index(max(layers, key=len)) if layers else -1  # the most specific: method.config, not method


def _imports(path: pathlib.Path) -> set[str]:
    """The package's modules `path` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("statecentric_jax"):
            for alias in node.names:  # `from statecentric_jax import config` imports a module
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if _is_module(submodule) else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("statecentric_jax"))
    return found


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _module(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_imports_point_down():
    upward = [
        f"{_module(path)} -> {target}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for target in sorted(_imports(path))
        if _rank(target) > _rank(_module(path))
    ]
    assert upward == []


def test_the_check_sees_an_upward_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from statecentric_jax.search import base\nfrom statecentric_jax import errors\n")
    assert _imports(module) == {"statecentric_jax.search.base", "statecentric_jax.errors"}
    assert (
        _rank("statecentric_jax.search.base")
        > _rank("statecentric_jax.learning.train")
        > _rank("statecentric_jax.errors")
    )
    assert (
        _rank("statecentric_jax.method.config")
        < _rank("statecentric_jax.config")
        < _rank("statecentric_jax.method.pipeline")
    )
