"""Backward relevance: the part of a task that can matter for a given goal.

An atom is relevant if it is in the goal or a precondition of a relevant operator; an atom is
relevant as absent if it is a negative precondition of a relevant operator. An operator is relevant
if it adds a relevant atom or deletes an atom relevant as absent. Dropping every other operator
keeps every plan's relevant steps: an irrelevant operator adds nothing a later relevant precondition
or the goal needs and deletes nothing a negative one needs, so its other effects only ever disable
steps. So a goal is reachable in the restricted task exactly when it is reachable in the full one,
by plans that run unchanged in it.

A goal agenda needs this on the task's `Operator`s once per stage, so it is computed here with a
worklist over each atom's adders (and deleters, for atoms relevant as absent).

A goal agenda (`search/agenda.py`) pursues a few goals at a time; for one package's goal in
Logistics the restricted task keeps the vehicles' moves and that package's loads and unloads, not
the other packages', so neither the search nor the cost-to-go sees the rest of the problem.

Goals that already hold and must keep holding (`kept`) are pursued too only when an operator
relevant to what is pursued may delete them. The others stay true in every state of the restricted
task, so they need no operators: a delivered package's loads and unloads drop out of the later
stages, while in Blocks a stacked goal that a new goal's moves may undo stays pursued. That keeps
the restriction exact: any plan from `state` for goal and kept atoms together has a subsequence, of
relevant operators, that reaches the goal and deletes no kept atom left unpursued.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Set

from statecentric_jax.planning.tasks import Task


def relevant(task: Task, goal: Set[str], kept: Set[str] = frozenset()) -> tuple[frozenset[str], tuple[int, ...]]:
    """The relevant fluent atoms for `goal` (those relevant as absent included) and the relevant
    operators' indices (ascending); a `kept` atom becomes relevant, as a goal, once a relevant
    operator deletes it."""
    adders: dict[str, list[int]] = collections.defaultdict(list)
    deleters: dict[str, list[int]] = collections.defaultdict(list)
    negative_preconditions = any(op.pre_neg for op in task.operators)
    for index, op in enumerate(task.operators):
        for atom in op.add:
            adders[atom].append(index)
        if negative_preconditions:
            for atom in op.delete:
                deleters[atom].append(index)
    present, absent = set(goal), set[str]()
    frontier, operators = [(atom, adders) for atom in goal], set()
    while frontier:
        atom, changers = frontier.pop()
        for index in changers.get(atom, ()):
            if index in operators:
                continue
            operators.add(index)
            op = task.operators[index]
            for atom in (op.pre | (op.delete & kept)) - present:
                present.add(atom)
                frontier.append((atom, adders))
            for atom in op.pre_neg - absent:
                absent.add(atom)
                frontier.append((atom, deleters))
    return frozenset((present | absent) - task.static), tuple(sorted(operators))


def restrict(task: Task, state: frozenset[str], goal: Set[str], name: str, kept: frozenset[str] = frozenset()) -> Task:
    """`task` started in `state` with `goal` and `kept` (fluent atoms; `kept` hold in `state`),
    restricted to what is relevant for the goal and for the kept atoms that its operators threaten.

    States of the restricted task are the full states' relevant atoms and the kept ones; a plan of
    it runs unchanged in the full task from `state`, because its operators read and write those
    atoms exactly as the full ones do."""
    relevant_atoms, indices = relevant(task, goal, kept)
    atoms = relevant_atoms | kept
    operators = tuple(
        dataclasses.replace(op, add=op.add & atoms, delete=op.delete & atoms)
        for op in (task.operators[i] for i in indices)
    )
    return dataclasses.replace(
        task,
        name=name,
        init=state & atoms,
        goal=frozenset(goal) | kept | (task.goal & task.static),
        operators=operators,
    )
