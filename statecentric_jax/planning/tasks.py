"""Load a PDDL domain + problem into a grounded STRIPS task.

Pyperplan parses and grounds. Before that, a small s-expression reader checks the
files for what this project cannot handle (features used, not merely declared, and
names that the domain does not define), so that users get one clear line instead of
a parser traceback. Atoms and actions are lower-case strings in IPC notation,
e.g. "(on a b)" and "(stack a b)". A state is a frozenset of the atoms of fluent
(non-static) predicates; the static atoms, true in every state, are kept once in
`Task.static`. This keeps successor generation cheap (states are small) while
`state | task.static` is always the full PDDL state.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re

from pyperplan import grounding
from pyperplan.pddl.parser import Parser

from statecentric_jax.errors import InputError

SExpr = str | list | None  # an atom token, a nested list of them, or an absent section

_UNSUPPORTED_KEYWORDS = {
    "when": "conditional effects",
    "forall": "universal quantifiers",
    "exists": "existential quantifiers",
    "or": "disjunctive conditions",
    "imply": "implications",
    "increase": "numeric fluents",
    "decrease": "numeric fluents",
    "assign": "numeric fluents",
    "scale-up": "numeric fluents",
    "scale-down": "numeric fluents",
    "=": "equality or numeric conditions",
    ">": "numeric conditions",
    "<": "numeric conditions",
    ">=": "numeric conditions",
    "<=": "numeric conditions",
}
_UNSUPPORTED_SECTIONS = {
    ":derived": "derived predicates",
    ":functions": "numeric fluents",
    ":durative-action": "durative actions",
    ":constraints": "state trajectory constraints",
    ":metric": "plan metrics",
}


@dataclasses.dataclass(frozen=True)
class Operator:
    """A ground STRIPS action. `pre` holds only non-static preconditions."""

    name: str
    pre: frozenset[str]
    add: frozenset[str]
    delete: frozenset[str]

    def apply(self, state: frozenset[str]) -> frozenset[str]:
        return (state - self.delete) | self.add


@dataclasses.dataclass(frozen=True)
class Task:
    """A grounded planning problem; `operators` are sorted by name for determinism."""

    name: str
    domain_name: str
    domain_file: str
    problem_file: str
    objects: tuple[str, ...]  # in problem-file order, domain constants last
    predicates: tuple[tuple[str, int], ...]  # (name, arity), sorted
    static_predicates: frozenset[str]
    static: frozenset[str]  # atoms of static predicates, true in every state
    init: frozenset[str]  # fluent atoms of the initial state
    goal: frozenset[str]  # as written in the problem (may name static atoms)
    operators: tuple[Operator, ...]

    @functools.cached_property
    def fluent_goal(self) -> frozenset[str]:
        """The goal atoms a state must contain (static goal atoms that hold are dropped)."""
        return self.goal - self.static

    def goal_reached(self, state: frozenset[str]) -> bool:
        return self.fluent_goal <= state

    def missing_goal(self, state: frozenset[str]) -> frozenset[str]:
        return self.fluent_goal - state

    @functools.cached_property
    def _operators_by_name(self) -> dict[str, Operator]:
        return {op.name: op for op in self.operators}

    def operator(self, name: str) -> Operator | None:
        return self._operators_by_name.get(normalize_action(name))


def atom_predicate(atom: str) -> str:
    return atom[1:-1].split(" ", 1)[0]


def atom_arguments(atom: str) -> tuple[str, ...]:
    return tuple(atom[1:-1].split(" ")[1:])


def normalize_action(text: str) -> str:
    """'( Stack  A B )' -> '(stack a b)'."""
    inner = text.strip().lower()
    if inner.startswith("(") and inner.endswith(")"):
        inner = inner[1:-1]
    return "(" + " ".join(inner.split()) + ")"


def read_sexpr(path: str) -> list:
    """Parse one PDDL file into nested lists of lower-case tokens."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(path, f"cannot read file ({e})") from None
    stack: list[list] = [[]]
    for lineno, line in enumerate(text.splitlines(), 1):
        for token in re.findall(r"\(|\)|[^\s()]+", line.split(";", 1)[0].lower()):
            if token == "(":
                stack.append([])
            elif token == ")":
                if len(stack) == 1:
                    raise InputError(path, f"malformed PDDL: unexpected ')' on line {lineno}")
                closed = stack.pop()
                stack[-1].append(closed)
            else:
                stack[-1].append(token)
    if len(stack) != 1:
        raise InputError(path, f"malformed PDDL: {len(stack) - 1} unclosed '(' at end of file")
    top = stack[0]
    if len(top) != 1 or not isinstance(top[0], list) or top[0][:1] != ["define"]:
        raise InputError(path, "malformed PDDL: expected a single (define ...) form")
    return top[0]


def _section(define: list, key: str) -> list | None:
    for item in define[2:]:
        if isinstance(item, list) and item and item[0] == key:
            return item
    return None


def _names(typed_list: list) -> list[str]:
    """Names of a PDDL typed list, dropping '- type' annotations."""
    names, skip = [], False
    for token in typed_list:
        if skip:
            skip = False
        elif token == "-":
            skip = True
        elif isinstance(token, str):
            names.append(token)
    return names


def _walk(expr: SExpr, path: str, where: str) -> None:
    """Reject unsupported keywords and negation inside a condition or effect."""
    if not isinstance(expr, list) or not expr:
        return
    head = expr[0]
    if isinstance(head, str) and head in _UNSUPPORTED_KEYWORDS:
        raise InputError(path, f"unsupported feature: {_UNSUPPORTED_KEYWORDS[head]} ('{head}') in {where}")
    if head == "not" and not where.startswith("effect"):
        raise InputError(path, f"unsupported feature: negative preconditions ('not') in {where}")
    for sub in expr[1:]:
        _walk(sub, path, where)


def _atoms_of(expr: SExpr) -> list[list]:
    """The atoms of a conjunction of literals."""
    if not isinstance(expr, list) or not expr:
        return []
    if expr[0] in ("and", "not"):
        return [a for sub in expr[1:] for a in _atoms_of(sub)]
    return [expr]


def _check_domain(path: str, define: list) -> tuple[str, dict[str, int], list[str]]:
    if len(define) < 2 or not isinstance(define[1], list) or define[1][:1] != ["domain"] or len(define[1]) != 2:
        raise InputError(path, "malformed PDDL: a domain file starts with (define (domain NAME) ...)")
    for item in define[2:]:
        if isinstance(item, list) and item and item[0] in _UNSUPPORTED_SECTIONS:
            raise InputError(path, f"unsupported feature: {_UNSUPPORTED_SECTIONS[item[0]]} ('{item[0]}')")
    predicates_section = _section(define, ":predicates")
    if predicates_section is None:
        raise InputError(path, "malformed PDDL: the domain has no (:predicates ...) section")
    predicates = {}
    for p in predicates_section[1:]:
        if not isinstance(p, list) or not p or not isinstance(p[0], str):
            raise InputError(path, f"malformed PDDL: bad predicate declaration {_show(p)}")
        predicates[p[0]] = len(_names(p[1:]))
    constants_section = _section(define, ":constants")
    constants = _names(constants_section[1:]) if constants_section else []
    for item in define[2:]:
        if not (isinstance(item, list) and item and item[0] == ":action"):
            continue
        if len(item) < 2 or not isinstance(item[1], str):
            raise InputError(path, "malformed PDDL: an action without a name")
        fields = dict(zip(item[2::2], item[3::2]))
        params = set(_names(fields.get(":parameters", [])))
        for key, where in ((":precondition", "precondition"), (":effect", "effect")):
            expr = fields.get(key)
            _walk(expr, path, f"{where} of action '{item[1]}'")
            for atom in _atoms_of(expr):
                _check_atom(path, atom, predicates, params | set(constants), f"action '{item[1]}'")
    return define[1][1], predicates, constants


def _show(expr: SExpr) -> str:
    if isinstance(expr, list):
        return "(" + " ".join(_show(e) for e in expr) + ")"
    return str(expr)


def _check_atom(path: str, atom: list, predicates: dict[str, int], names: set[str], where: str) -> None:
    if not atom or not isinstance(atom[0], str) or any(isinstance(t, list) for t in atom):
        raise InputError(path, f"malformed PDDL: bad atom {_show(atom)} in {where}")
    name, args = atom[0], atom[1:]
    if name not in predicates:
        raise InputError(path, f"unknown predicate '{name}' in {where}")
    if len(args) != predicates[name]:
        raise InputError(path, f"predicate '{name}' takes {predicates[name]} arguments, got {len(args)} in {where}")
    for arg in args:
        if arg not in names:
            raise InputError(
                path, f"unknown {'parameter' if arg.startswith('?') else 'object'} '{arg}' in {_show(atom)} ({where})"
            )


def _check_problem(
    path: str, define: list, domain_name: str, predicates: dict[str, int], constants: list[str]
) -> list[str]:
    if len(define) < 2 or not isinstance(define[1], list) or define[1][:1] != ["problem"]:
        raise InputError(path, "malformed PDDL: a problem file starts with (define (problem NAME) ...)")
    declared = _section(define, ":domain")
    if declared is None or len(declared) != 2:
        raise InputError(path, "malformed PDDL: missing (:domain NAME)")
    if declared[1] != domain_name:
        raise InputError(path, f"problem is for domain '{declared[1]}', but the domain file defines '{domain_name}'")
    objects_section = _section(define, ":objects")
    objects = _names(objects_section[1:]) if objects_section else []
    names = set(objects) | set(constants)
    init = _section(define, ":init")
    goal = _section(define, ":goal")
    if init is None or goal is None:
        raise InputError(path, f"malformed PDDL: missing {'(:init ...)' if init is None else '(:goal ...)'}")
    for atom in init[1:]:
        if isinstance(atom, list) and atom[:1] == ["="]:
            raise InputError(path, "unsupported feature: numeric fluents ('=') in the initial state")
        _check_atom(path, atom if isinstance(atom, list) else [atom], predicates, names, "the initial state")
    if len(goal) != 2:
        raise InputError(path, "malformed PDDL: (:goal ...) must hold exactly one condition")
    _walk(goal[1], path, "the goal")
    for atom in _atoms_of(goal[1]):
        _check_atom(path, atom, predicates, names, "the goal")
    return objects + [c for c in constants if c not in objects]


def _static_predicates(define: list) -> frozenset[str]:
    changed: set[str] = set()
    for item in define[2:]:
        if isinstance(item, list) and item[:1] == [":action"]:
            fields = dict(zip(item[2::2], item[3::2]))
            changed.update(atom[0] for atom in _atoms_of(fields.get(":effect")))
    predicates = _section(define, ":predicates") or []  # checked present by _check_domain
    return frozenset(p[0] for p in predicates[1:] if p[0] not in changed)


def problem_from_state(task: Task, state: frozenset[str], name: str) -> str:
    """PDDL text of `task`'s problem started in `state` (fluent atoms; the static ones are added back):
    the same objects and goal, so a planner can solve on from any state a decoder reached."""
    define = read_sexpr(task.problem_file)
    init = [":init"] + [atom[1:-1].split(" ") for atom in sorted(state | task.static)]
    sections = [init if isinstance(item, list) and item[:1] == [":init"] else item for item in define[2:]]
    return "\n".join(["(define (problem " + name + ")", *(" " + _show(item) for item in sections), ")"]) + "\n"


def check_domain(domain_file: str | os.PathLike) -> None:
    """Check a domain file alone, so a batch fails once on a bad domain rather than once per problem."""
    domain_file = os.fspath(domain_file)
    _check_domain(domain_file, read_sexpr(domain_file))


def load_task(domain_file: str | os.PathLike, problem_file: str | os.PathLike) -> Task:
    """Parse, check and ground a STRIPS problem; raises InputError on bad input."""
    domain_file, problem_file = os.fspath(domain_file), os.fspath(problem_file)
    domain_expr = read_sexpr(domain_file)
    domain_name, predicates, constants = _check_domain(domain_file, domain_expr)
    objects = _check_problem(problem_file, read_sexpr(problem_file), domain_name, predicates, constants)
    parser = Parser(domain_file, problem_file)
    try:
        domain = parser.parse_domain()
    except Exception as e:  # pyperplan's parse/semantic errors carry no file name
        raise InputError(domain_file, f"malformed PDDL: {e}") from None
    try:
        problem = parser.parse_problem(domain)
    except Exception as e:
        raise InputError(problem_file, f"malformed PDDL: {e}") from None
    grounded = grounding.ground(problem, remove_statics_from_initial_state=False, remove_irrelevant_operators=False)
    static_predicates = _static_predicates(domain_expr)
    init = frozenset(grounded.initial_state)
    static = frozenset(a for a in init if atom_predicate(a) in static_predicates)
    operators = sorted(
        (Operator(op.name, op.preconditions, op.add_effects, op.del_effects) for op in grounded.operators),
        key=lambda op: op.name,
    )
    return Task(
        name=problem.name,
        domain_name=domain_name,
        domain_file=domain_file,
        problem_file=problem_file,
        objects=tuple(objects),
        predicates=tuple(sorted(predicates.items())),
        static_predicates=static_predicates,
        static=static,
        init=init - static,
        goal=frozenset(grounded.goals),
        operators=tuple(operators),
    )
