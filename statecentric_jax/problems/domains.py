"""The four benchmark domains: canonical names, declared PDDL names and domain files.

The domain files ship as package data (`problems/pddl/<domain>.pddl`); `data/domains/<domain>/domain.pddl`
links to them. They have the same predicates, action schemas and `(domain NAME)` as the paper's
files, so a model trained on one problem set is usable on the other.
"""

from __future__ import annotations

import importlib.resources
import pathlib

DOMAINS = ("blocks", "gripper", "logistics", "visitall")
PAPER_ORDER = ("blocks", "gripper", "visitall", "logistics")  # Table 1's row order

# The `(domain NAME)` each problem file must declare.
PDDL_NAMES = {"blocks": "blocks", "gripper": "gripper-strips", "logistics": "logistics", "visitall": "grid-visit-all"}


def domain_file(domain: str) -> pathlib.Path:
    """The shipped PDDL domain file of a benchmark domain."""
    return pathlib.Path(str(importlib.resources.files("statecentric_jax.problems") / "pddl" / f"{domain}.pddl"))


def domain_text(domain: str) -> str:
    return domain_file(domain).read_text()
