"""Load a PDDL domain + problem into a grounded STRIPS task (with negative preconditions).

A small s-expression reader checks the files for what this project cannot handle
(features used, not merely declared, and names that the domain does not define), so
that users get one clear line instead of a parser traceback. Fast Downward's
translator, used as a library, then parses and finds the actions by relaxed reachability:
only the actions whose preconditions some relaxed plan can reach become operators, as in
Fast Downward itself (made here as its `instantiate` makes them, without its objects).
Atoms and actions are lower-case strings in IPC notation, e.g. "(on a b)" and
"(stack a b)". A state is a frozenset of the atoms of fluent
(non-static) predicates; the static atoms, true in every state, are kept once in
`Task.static`. This keeps successor generation cheap (states are small) while
`state | task.static` is always the full PDDL state.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import operator
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator

from fast_downward.translate import build_model, normalize, options, pddl, pddl_to_prolog
from fast_downward.translate.pddl_parser import parsing_functions

from statecentric_jax.collector import collector_paused
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


@dataclasses.dataclass(frozen=True, slots=True)
class Operator:
    """A ground STRIPS action. `pre` and `pre_neg` (atoms that must be false) hold only fluent atoms."""

    name: str
    pre: frozenset[str]
    add: frozenset[str]
    delete: frozenset[str]
    pre_neg: frozenset[str] = frozenset()

    def applicable(self, state: frozenset[str]) -> bool:
        return self.pre <= state and self.pre_neg.isdisjoint(state)

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
    constants: frozenset[str] = frozenset()  # the domain's: its actions may name them

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


def _conjuncts(expr: SExpr) -> list:
    """The members of a condition or effect with nested (and ...) flattened, in order; without
    recursion, so that a conjunction nested thousands deep is no different from a flat one."""
    pending, found = [expr], []
    while pending:
        item = pending.pop()
        if isinstance(item, list) and item[:1] == ["and"]:
            pending.extend(reversed(item[1:]))
        elif item is not None and item != []:  # () is the empty condition
            found.append(item)
    return found


def _literals(expr: SExpr, path: str, where: str) -> list[tuple[bool, list]]:
    """(positive, atom) of a conjunction of literals; an atom may be an equality (= a b) outside effects.

    Raises InputError on everything else: unsupported keywords, negated compound conditions,
    negation or equality where they are not supported (the goal; equality in effects)."""
    literals = []
    for item in _conjuncts(expr):
        positive = not (isinstance(item, list) and item[:1] == ["not"])
        atom = item if positive else (item[1] if len(item) == 2 else None)
        head = atom[0] if isinstance(atom, list) and atom else None
        if isinstance(head, str) and head in _UNSUPPORTED_KEYWORDS:
            raise InputError(path, f"unsupported feature: {_UNSUPPORTED_KEYWORDS[head]} ('{head}') in {where}")
        if not isinstance(atom, list) or head in ("not", "and"):
            raise InputError(path, f"unsupported feature: negation of a compound condition in {where}")
        if not positive and where == "the goal":
            raise InputError(path, f"unsupported feature: negative goals ('not') in {where}")
        if head == "=" and (where == "the goal" or where.startswith("effect")):
            raise InputError(path, f"unsupported feature: equality ('=') in {where}")
        literals.append((positive, atom))
    return literals


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
            for _, atom in _literals(fields.get(key), path, f"{where} of action '{item[1]}'"):
                _check_atom(path, atom, predicates, params | set(constants), f"action '{item[1]}'")
    return define[1][1], predicates, constants


def _tokens(expr: SExpr) -> Iterator[str]:
    pending: list = [expr]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            pending.append(")")
            pending.extend(reversed(item))
            yield "("
        else:
            yield str(item)


def _show(expr: SExpr) -> str:
    """PDDL text of an s-expression (without recursion: error messages may show deep input)."""
    return re.sub(r"\( | \)", lambda m: m.group(0).strip(), " ".join(_tokens(expr)))


def _check_atom(path: str, atom: list, predicates: dict[str, int], names: set[str], where: str) -> None:
    if not atom or not isinstance(atom[0], str) or any(isinstance(t, list) for t in atom):
        raise InputError(path, f"malformed PDDL: bad atom {_show(atom)[:200]} in {where}")
    name, args = atom[0], atom[1:]
    arity = 2 if name == "=" else predicates.get(name)
    if arity is None:
        raise InputError(path, f"unknown predicate '{name}' in {where}")
    if len(args) != arity:
        raise InputError(path, f"predicate '{name}' takes {arity} arguments, got {len(args)} in {where}")
    for arg in args:
        if arg not in names:
            raise InputError(
                path, f"unknown {'parameter' if arg.startswith('?') else 'object'} '{arg}' in {_show(atom)} ({where})"
            )


def _check_problem(
    path: str, define: list, domain_name: str, predicates: dict[str, int], constants: list[str]
) -> tuple[list[str], list[list], list[list]]:
    """The problem's objects (domain constants last), initial atoms and goal atoms."""
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
    init_atoms = [atom if isinstance(atom, list) else [atom] for atom in init[1:]]
    for atom in init_atoms:
        if atom[:1] == ["="]:
            raise InputError(path, "unsupported feature: numeric fluents ('=') in the initial state")
        _check_atom(path, atom, predicates, names, "the initial state")
    if len(goal) != 2:
        raise InputError(path, "malformed PDDL: (:goal ...) must hold exactly one condition")
    goal_atoms = [atom for _, atom in _literals(goal[1], path, "the goal")]
    for atom in goal_atoms:
        _check_atom(path, atom, predicates, names, "the goal")
    return objects + [c for c in constants if c not in objects], init_atoms, goal_atoms


def _static_predicates(define: list) -> frozenset[str]:
    changed: set[str] = set()
    for item in define[2:]:
        if isinstance(item, list) and item[:1] == [":action"]:
            fields = dict(zip(item[2::2], item[3::2]))
            changed.update(atom[0] for _, atom in _literals(fields.get(":effect"), "", "effect"))
    predicates = _section(define, ":predicates") or []  # checked present by _check_domain
    return frozenset(p[0] for p in predicates[1:] if p[0] not in changed)


def _for_translator(define: list, constants: frozenset[str] = frozenset()) -> list:
    """`define` as the translator reads it: every action's precondition and effect and the goal as one flat
    (and ...) (its parser recurses into nested conjunctions), and without problem objects that repeat a
    domain constant (which it refuses)."""
    flat = list(define)
    for index, item in enumerate(flat):
        if isinstance(item, list) and item[:1] == [":action"]:
            item = list(item)
            for key in range(2, len(item) - 1, 2):
                if item[key] in (":precondition", ":effect"):
                    item[key + 1] = ["and", *_conjuncts(item[key + 1])]
            flat[index] = item
        elif isinstance(item, list) and item[:1] == [":goal"] and len(item) == 2:
            flat[index] = [":goal", ["and", *_conjuncts(item[1])]]
        elif isinstance(item, list) and item[:1] == [":objects"] and constants:
            flat[index] = [":objects", *_without(item[1:], constants)]
    return flat


def _without(typed_list: list, names: frozenset[str]) -> list:
    """A PDDL typed list without `names` (a '- type' left with no name goes too)."""
    kept: list = []
    group: list = []
    tokens = iter(typed_list)
    for token in tokens:
        if token == "-":
            kind = next(tokens, None)
            if group:
                kept += [*group, "-", kind]
            group = []
        elif token not in names:
            group.append(token)
    return kept + group


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


class _MutedFor(io.TextIOBase):
    """A text stream that drops what one thread writes and passes the other threads' writes on."""

    def __init__(self, stream, thread: int):
        self._stream, self._thread = stream, thread

    def write(self, text: str) -> int:
        return len(text) if threading.get_ident() == self._thread else self._stream.write(text)

    def flush(self) -> None:
        self._stream.flush()


_translator_lock = threading.Lock()  # the translator keeps its options in a module global


@contextlib.contextmanager
def quiet_translator() -> Iterator[None]:
    """Serialise translator calls and drop the progress lines and warnings it prints."""
    with _translator_lock:
        stdout, stderr, me = sys.stdout, sys.stderr, threading.get_ident()
        sys.stdout, sys.stderr = _MutedFor(stdout, me), _MutedFor(stderr, me)
        try:
            yield
        finally:
            sys.stdout, sys.stderr = stdout, stderr


GroundActions = list[tuple[str, frozenset[str], frozenset[str], frozenset[str], frozenset[str]]]
Grounder = Callable[[str, str, list, list], GroundActions]


AtomKey = tuple[str, tuple[str, ...]]  # an atom as (predicate, arguments): hashed in C, unlike the translator's atoms
Arguments = Callable[[tuple[str, ...]], tuple[str, ...]]  # a literal's arguments from its action's
LiteralTemplate = tuple[bool, str, Arguments]  # (negated, predicate, arguments)


def _arguments(spec: tuple[int | str, ...]) -> Arguments:
    """The arguments of a literal from its action's: `spec` gives each one's parameter index, or a constant."""
    positions = [item for item in spec if isinstance(item, int)]
    if len(positions) == len(spec) > 1:
        return operator.itemgetter(*positions)  # a tuple for two or more
    if len(positions) == len(spec) == 1:
        position = positions[0]
        return lambda args: (args[position],)
    return lambda args: tuple([args[item] if isinstance(item, int) else item for item in spec])


def _literals_of(action: pddl.Action) -> tuple[list[LiteralTemplate], list[LiteralTemplate]]:
    """The precondition's and the effects' literals of a normalized action of a STRIPS domain (what
    `_check_domain` accepts: conjunctions of literals, effects without conditions or parameters)."""
    index = {parameter.name: position for position, parameter in enumerate(action.parameters)}

    def literal(condition: pddl.Literal) -> LiteralTemplate:
        spec = tuple(index.get(arg, arg) for arg in condition.args)
        return condition.negated, condition.predicate, _arguments(spec)

    precondition = action.precondition
    parts = (precondition,) if isinstance(precondition, pddl.Literal) else precondition.parts
    assert all(isinstance(part, pddl.Literal) for part in parts), action.name
    assert all(not effect.parameters and isinstance(effect.condition, pddl.Truth) for effect in action.effects)
    return [literal(part) for part in parts], [literal(effect.literal) for effect in action.effects]


def _instantiated(task: pddl.Task, model: list) -> GroundActions:
    """(name, pre, pre_neg, add, delete) of the model's actions, as the translator's `instantiate` makes
    them but without its objects: a static literal is decided by the initial state (an action whose
    static precondition fails is left out), a fluent one is kept, an effect on an atom never reached is
    dropped, and an atom both added and deleted is added. Fluent atoms only."""
    fluent_predicates = {effect.literal.predicate for action in task.actions for effect in action.effects}
    fluent: set[AtomKey] = set()
    for atom in model:
        if atom.predicate in fluent_predicates:
            fluent.add((atom.predicate, tuple(atom.args)))
    init = {(fact.predicate, tuple(fact.args)) for fact in task.init if isinstance(fact, pddl.Atom)}
    strings: dict[AtomKey, str] = {}

    def text(key: AtomKey) -> str:  # one string per atom, shared by every operator that names it
        found = strings.get(key)
        if found is None:
            found = strings[key] = "(" + " ".join((key[0], *key[1])) + ")"
        return found

    compiled: dict[int, tuple[list[LiteralTemplate], list[LiteralTemplate]]] = {}
    ground = []
    for atom in model:
        action = atom.predicate
        if not isinstance(action, pddl.Action):
            continue
        if id(action) not in compiled:
            compiled[id(action)] = _literals_of(action)
        precondition, effects = compiled[id(action)]
        args = tuple(atom.args)
        pre: list[str] = []
        pre_neg: list[str] = []
        for negated, predicate, arguments in precondition:
            key = (predicate, arguments(args))
            if key in fluent:
                (pre_neg if negated else pre).append(text(key))
            elif (key in init) == negated:  # a static atom that fails: true where it must be false, or false
                break
        else:
            adds: set[str] = set()
            deletes: set[str] = set()
            for negated, predicate, arguments in effects:
                key = (predicate, arguments(args))
                if key in fluent:
                    (deletes if negated else adds).add(text(key))
            external = args[: action.num_external_parameters]
            name = "(" + " ".join((action.name, *external)) + ")"
            pre_set = frozenset(pre)
            add = frozenset(adds) - pre_set  # adding what holds changes nothing
            ground.append((name, pre_set, frozenset(pre_neg), add, frozenset(deletes - adds)))  # add-after-delete
    return ground


def translator_task(domain_file: str, problem_file: str, domain_pddl: list, problem_pddl: list) -> pddl.Task:
    """The translator's normalized task of the files (call within `quiet_translator`). The files are read
    already (`domain_pddl`, `problem_pddl`: their checked s-expressions); they name the errors."""
    options.set_options(["--keep-no-ops", "--", domain_file, problem_file])  # operators without effects too
    try:
        task = parsing_functions.parse_task(domain_pddl, problem_pddl)
    except (Exception, SystemExit) as e:  # the translator's ParseError and exits carry no file name
        reason = " ".join(line.strip(" \t->") for line in str(e).splitlines() if line.strip(" \t->"))
        path = domain_file if reason.startswith("Parsing domain") else problem_file
        raise InputError(path, f"malformed PDDL: {reason[:300]}") from None
    normalize.normalize(task)
    return task


def ground_reachable(domain_file: str, problem_file: str, domain_pddl: list, problem_pddl: list) -> GroundActions:
    """(name, pre, pre_neg, add, delete) of the relaxed-reachable ground actions: the actions of Fast
    Downward's translator's reachability model (`_instantiated`); fluent atoms only (static preconditions are
    decided at grounding)."""
    with quiet_translator():
        task = translator_task(domain_file, problem_file, domain_pddl, problem_pddl)
        model = build_model.compute_model(pddl_to_prolog.translate(task))
    return _instantiated(task, model)


@collector_paused()
def load_task(
    domain_file: str | os.PathLike, problem_file: str | os.PathLike, grounder: Grounder = ground_reachable
) -> Task:
    """Parse, check and ground a STRIPS problem (negative preconditions, types, constants and
    equality allowed); raises InputError on bad input. `grounder`: another grounding, as a reference."""
    domain_file, problem_file = os.fspath(domain_file), os.fspath(problem_file)
    domain_expr = read_sexpr(domain_file)
    domain_name, predicates, constants = _check_domain(domain_file, domain_expr)
    problem_expr = read_sexpr(problem_file)
    objects, init_atoms, goal_atoms = _check_problem(problem_file, problem_expr, domain_name, predicates, constants)
    domain_pddl, problem_pddl = _for_translator(domain_expr), _for_translator(problem_expr, frozenset(constants))
    ground = grounder(domain_file, problem_file, domain_pddl, problem_pddl)
    static_predicates = _static_predicates(domain_expr)
    init = frozenset("(" + " ".join(atom) + ")" for atom in init_atoms)
    static = frozenset(a for a in init if atom_predicate(a) in static_predicates)
    operators = sorted(
        (Operator(name, pre, add, delete, pre_neg) for name, pre, pre_neg, add, delete in ground),
        key=lambda op: op.name,
    )
    return Task(
        name=problem_expr[1][1] if len(problem_expr[1]) > 1 else "",
        domain_name=domain_name,
        domain_file=domain_file,
        problem_file=problem_file,
        objects=tuple(objects),
        predicates=tuple(sorted(predicates.items())),
        static_predicates=static_predicates,
        static=static,
        init=init - static,
        goal=frozenset("(" + " ".join(atom) + ")" for atom in goal_atoms),
        operators=tuple(operators),
        constants=frozenset(constants),
    )
