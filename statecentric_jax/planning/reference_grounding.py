"""References that `tasks.load_task`'s grounding is tested and timed against.

Pyperplan grounds every action with every combination of objects that the static facts allow,
whether reachable or not, and supports neither negative preconditions nor equality: on the
domains it supports, its task and `load_task`'s agree on every reachable state. Fast Downward's
translator instantiates the same reachability model as `load_task` into objects of its own
(`instantiate.explore`): converted, the same ground actions in the same order.
"""

from __future__ import annotations

import os

from fast_downward.translate import instantiate
from pyperplan import grounding
from pyperplan import task as pyperplan_task
from pyperplan.pddl.parser import Parser

from statecentric_jax.planning.tasks import GroundActions, Task, load_task, quiet_translator, translator_task


def pyperplan_grounded(domain_file: str | os.PathLike, problem_file: str | os.PathLike) -> pyperplan_task.Task:
    """Pyperplan's own ground task (static atoms kept in its initial state)."""
    parser = Parser(os.fspath(domain_file), os.fspath(problem_file))
    problem = parser.parse_problem(parser.parse_domain())
    return grounding.ground(problem, remove_statics_from_initial_state=False, remove_irrelevant_operators=False)


def ground_all(domain_file: str, problem_file: str, domain_pddl: list, problem_pddl: list) -> GroundActions:
    """`tasks.ground_reachable`'s result by pyperplan (which reads the files itself)."""
    empty: frozenset[str] = frozenset()
    return [
        (op.name, op.preconditions, empty, op.add_effects, op.del_effects)
        for op in pyperplan_grounded(domain_file, problem_file).operators
    ]


def reference_task(domain_file: str | os.PathLike, problem_file: str | os.PathLike) -> Task:
    """The task that `load_task` built with pyperplan's grounding."""
    return load_task(domain_file, problem_file, grounder=ground_all)


def translator_grounded(domain_file: str, problem_file: str, domain_pddl: list, problem_pddl: list) -> GroundActions:
    """`tasks.ground_reachable`'s result from the translator's own instantiation."""
    with quiet_translator():
        _, _, actions, _, _, _ = instantiate.explore(
            translator_task(domain_file, problem_file, domain_pddl, problem_pddl)
        )

    def text(atom) -> str:
        return "(" + " ".join((atom.predicate, *atom.args)) + ")"

    ground = []
    for action in actions:
        pre = frozenset(text(literal) for literal in action.precondition if not literal.negated)
        pre_neg = frozenset(text(literal) for literal in action.precondition if literal.negated)
        add = frozenset(text(atom) for _, atom in action.add_effects) - pre
        delete = frozenset(text(atom) for _, atom in action.del_effects) - add
        name = action.name if not action.name.endswith(" )") else action.name[:-2] + ")"
        ground.append((name, pre, pre_neg, add, delete))
    return ground
