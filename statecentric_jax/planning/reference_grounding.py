"""Pyperplan's grounding, the reference that `tasks.load_task`'s grounding is tested and timed against.

Pyperplan grounds every action with every combination of objects that the static facts allow,
whether reachable or not, and supports neither negative preconditions nor equality: on the
domains it supports, its task and `load_task`'s agree on every reachable state.
"""

from __future__ import annotations

import dataclasses
import os

from pyperplan import grounding
from pyperplan import task as pyperplan_task
from pyperplan.pddl.parser import Parser

from statecentric_jax.planning.tasks import Operator, Task, load_task


def pyperplan_grounded(domain_file: str | os.PathLike, problem_file: str | os.PathLike) -> pyperplan_task.Task:
    """Pyperplan's own ground task (static atoms kept in its initial state)."""
    parser = Parser(os.fspath(domain_file), os.fspath(problem_file))
    problem = parser.parse_problem(parser.parse_domain())
    return grounding.ground(problem, remove_statics_from_initial_state=False, remove_irrelevant_operators=False)


def pyperplan_operators(domain_file: str | os.PathLike, problem_file: str | os.PathLike) -> tuple[Operator, ...]:
    """Pyperplan's ground operators (static preconditions dropped), sorted by name."""
    grounded = pyperplan_grounded(domain_file, problem_file)
    return tuple(
        sorted(
            (Operator(op.name, op.preconditions, op.add_effects, op.del_effects) for op in grounded.operators),
            key=lambda op: op.name,
        )
    )


def reference_task(domain_file: str | os.PathLike, problem_file: str | os.PathLike) -> Task:
    """`load_task`'s task with pyperplan's operators instead."""
    return dataclasses.replace(
        load_task(domain_file, problem_file), operators=pyperplan_operators(domain_file, problem_file)
    )
