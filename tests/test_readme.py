"""Every command the README and docs/*.md show names an existing program and only flags that program defines."""

import functools
import pathlib
import re
import subprocess
import sys

import pytest

from statecentric_jax import config as config_lib

REPO = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = re.compile(r"python (launch/\w+\.py|-m benchmarks\.\w+)((?: +--[\w.]+(?:=[^\s`]*)?)*)")


def _commands() -> list[tuple[str, str]]:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    text = "\n".join(page.read_text() for page in pages).replace("\\\n", " ")  # join continued shell lines
    return sorted({(m.group(1), m.group(2).strip()) for m in PROGRAM.finditer(text)})


@functools.cache
def _defined_flags(program: str) -> frozenset[str]:
    argv = [sys.executable, *program.split()] if program.startswith("-m") else [sys.executable, program]
    out = subprocess.run([*argv, "--help"], cwd=REPO, capture_output=True, text=True, timeout=120)
    return frozenset(re.findall(r"^\s+--(?:\[no\])?([\w.]+)[:=]", out.stdout, re.M))


def _config_keys(config, prefix="") -> set[str]:
    keys = set()
    for key, value in config.items():
        keys.add(prefix + key)
        if hasattr(value, "items"):
            keys |= _config_keys(value, f"{prefix}{key}.")
    return keys


def test_the_readme_shows_commands():
    assert len(_commands()) >= 15


@pytest.mark.parametrize("program, flags", _commands())
def test_readme_command_runs_as_written(program, flags):
    defined = _defined_flags(program)
    assert defined, f"{program} --help printed no flags"
    for flag in re.findall(r"--([\w.]+)(?:=(\S*))?", flags):
        name, value = flag
        if name.startswith("config."):
            assert name.removeprefix("config.") in _config_keys(config_lib.base()), f"{program}: --{name}"
            continue
        assert name in defined, f"{program} has no flag --{name}"
        if name == "config" and "<" not in value:
            assert (REPO / value).is_file(), f"{program}: no config file {value}"


def _anchors(page: pathlib.Path) -> set[str]:
    """The page's heading anchors as GitHub makes them, and its explicit `<a id>` anchors."""
    text = page.read_text()
    headings = re.findall(r"^#+ (.*)$", re.sub(r"```.*?```", "", text, flags=re.S), re.M)
    slugs = {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}
    return slugs | set(re.findall(r'<a id="([^"]+)"', text))


def test_links_between_the_pages_resolve():
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target, anchor in re.findall(r"\]\(([^)#\s:]*)(?:#([^)\s]+))?\)", page.read_text()):
            path = (page.parent / target).resolve() if target else page
            if not path.exists() or (anchor and path.suffix == ".md" and anchor not in _anchors(path)):
                broken.append(f"{page.relative_to(REPO)}: {target}#{anchor}")
    assert not broken
