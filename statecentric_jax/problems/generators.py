"""Seeded generators of PDDL problems, and the spec of the project's bundled dataset.

Each generator draws from its own `random.Random(seed)` (never the global RNG), so the
same arguments always give the same text. Object names: blocks `b1..bN`; gripper rooms
`rooma, roomb, ...`, balls `ball1..ballN`, grippers `left right`; logistics (as in the
paper's p04 files) airplanes `a0..`, cities `c0..`, trucks `t0..` (truck `tI` serves
city `cI`), locations `lI-J` of city `cI` with `lI-0` its airport, packages `p0..`;
visitall cells `loc-xI-yJ`, exactly as in the paper's visitall-from-everywhere files.

Five generators write problems for domain files of the IPC 2023 learning track, which is not
bundled (pass its domain file where the problem is read): `ipc_blocksworld` (blocks `b1..bN`,
its predicate names `on-table` and `arm-empty`), `ipc_ferry` (cars `car1..`, locations `loc1..`,
typed), `ipc_miconic` (passengers `p1..`, floors `f1..`, typed), `ipc_rovers` (`rover1..`,
`waypoint1..`, `camera1..`, `objective1..`, each rover's store `roverIstore`, the lander `general`,
typed, as the IPC generator names them) and `ipc_satellite` (`sat1..`, `ins1..`, `mod1..`, `dir1..`, typed).

`DATASET` reproduces the paper's dataset table (tab:dataset_stats) split by split, and
`write_dataset` lays it out as a PDDL root (see `layout`).
"""

from __future__ import annotations

import bisect
import itertools
import math
import os
import pathlib
import random
from collections.abc import Callable, Sequence

from statecentric_jax.atomic import write_text
from statecentric_jax.errors import InputError
from statecentric_jax.problems import layout
from statecentric_jax.problems.domains import DOMAINS, PDDL_NAMES, domain_text

Problem = tuple[list[str], list[str], list[str]]  # objects, initial atoms, goal atoms


def _atom(*terms: str) -> str:
    return "(" + " ".join(terms) + ")"


def _pddl(domain: str, name: str, problem: Problem) -> str:
    """Problem text in the layout of the paper's visitall files (one atom a line); `domain` as in the
    domain file's `(define (domain ...))`."""
    objects, init, goal = problem
    return "\n".join(
        [
            f"(define (problem {name})",
            f"  (:domain {domain})",
            f"  (:objects {' '.join(objects)})",
            "  (:init",
            *(f"    {atom}" for atom in init),
            "  )",
            "  (:goal",
            "    (and",
            *(f"      {atom}" for atom in goal),
            "    )",
            "  )",
            ")",
            "",
        ]
    )


def _random_towers(rng: random.Random, blocks: list[str]) -> list[list[str]]:
    """A uniformly random blocksworld configuration, as towers listed bottom to top.

    There are L(n,k) = n!/k! * C(n-1,k-1) configurations with k towers (Lah numbers).
    Draw k with that weight, then cut a random order of the blocks at k-1 random gaps:
    each configuration with k towers comes from exactly k! (order, cuts) pairs.
    """
    n = len(blocks)
    weights = [math.factorial(n) // math.factorial(k) * math.comb(n - 1, k - 1) for k in range(1, n + 1)]
    cumulative = list(itertools.accumulate(weights))
    towers = bisect.bisect_right(cumulative, rng.randrange(cumulative[-1])) + 1
    order = rng.sample(blocks, n)
    bounds = [0, *sorted(rng.sample(range(1, n), towers - 1)), n]
    return [order[start:stop] for start, stop in itertools.pairwise(bounds)]


def _tower_atoms(towers: list[list[str]]) -> list[str]:
    """The ontable/on atoms that describe the towers."""
    atoms = [_atom("ontable", tower[0]) for tower in towers]
    return atoms + [_atom("on", upper, lower) for tower in towers for lower, upper in itertools.pairwise(tower)]


def _sample_blocks(rng: random.Random, n: int) -> Problem:
    if n < 2:
        raise ValueError(f"blocks needs at least 2 blocks for init != goal, got {n}")
    blocks = [f"b{i}" for i in range(1, n + 1)]
    init = _random_towers(rng, blocks)
    goal = init
    while sorted(goal) == sorted(init):
        goal = _random_towers(rng, blocks)
    clear = [_atom("clear", tower[-1]) for tower in init]
    return blocks, clear + _tower_atoms(init) + ["(handempty)"], _tower_atoms(goal)


def _sample_gripper(rng: random.Random, n_balls: int, n_rooms: int = 2) -> Problem:
    if n_balls < 1 or not 2 <= n_rooms <= 26:
        raise ValueError(f"gripper needs >= 1 ball and 2..26 rooms, got {n_balls} balls, {n_rooms} rooms")
    rooms = [f"room{chr(ord('a') + i)}" for i in range(n_rooms)]
    balls = [f"ball{i}" for i in range(1, n_balls + 1)]
    if n_rooms == 2:  # IPC: everything starts in rooma, every ball must go to roomb
        robot, start, target = rooms[0], [rooms[0]] * n_balls, [rooms[1]] * n_balls
    else:
        robot = rng.choice(rooms)
        start = [rng.choice(rooms) for _ in balls]
        target = [rng.choice([room for room in rooms if room != first]) for first in start]
    init = [_atom("room", room) for room in rooms] + [_atom("ball", ball) for ball in balls]
    init += ["(gripper left)", "(gripper right)", _atom("at-robby", robot), "(free left)", "(free right)"]
    init += [_atom("at", ball, room) for ball, room in zip(balls, start)]
    return rooms + balls + ["left", "right"], init, [_atom("at", ball, room) for ball, room in zip(balls, target)]


def _sample_logistics(
    rng: random.Random, cities: int, locations_per_city: int, packages: int, airplanes: int, goals: int
) -> Problem:
    if min(cities, locations_per_city, airplanes) < 1 or cities * locations_per_city < 2 or not 0 <= goals <= packages:
        raise ValueError(
            f"logistics needs >= 1 city, location per city and airplane, >= 2 locations and 0 <= goals <= packages, "
            f"got {cities} cities, {locations_per_city} locations per city, {airplanes} airplanes, "
            f"{goals} goals of {packages} packages"
        )
    city_names = [f"c{c}" for c in range(cities)]
    trucks = [f"t{c}" for c in range(cities)]
    planes = [f"a{i}" for i in range(airplanes)]
    places = [[f"l{c}-{j}" for j in range(locations_per_city)] for c in range(cities)]
    airports = [city_places[0] for city_places in places]
    locations = [loc for city_places in places for loc in city_places]
    parcels = [f"p{i}" for i in range(packages)]
    init = [_atom("airplane", plane) for plane in planes] + [_atom("city", city) for city in city_names]
    init += [_atom("truck", truck) for truck in trucks]
    for city, city_places in zip(city_names, places):
        init += [atom for loc in city_places for atom in (_atom("location", loc), _atom("in-city", loc, city))]
    init += [_atom("airport", loc) for loc in airports] + [_atom("package", parcel) for parcel in parcels]
    init += [_atom("at", truck, rng.choice(city_places)) for truck, city_places in zip(trucks, places)]
    start = [rng.choice(locations) for _ in parcels]
    init += [_atom("at", parcel, loc) for parcel, loc in zip(parcels, start)]
    init += [_atom("at", plane, rng.choice(airports)) for plane in planes]
    goal = [
        _atom("at", parcels[i], rng.choice([loc for loc in locations if loc != start[i]]))
        for i in sorted(rng.sample(range(packages), goals))
    ]
    return planes + city_names + trucks + locations + parcels, init, goal


def _visitall_problem(w: int, h: int, start: tuple[int, int]) -> Problem:
    if w < 1 or h < 1 or not (0 <= start[0] < w and 0 <= start[1] < h):
        raise ValueError(f"visitall needs a start cell inside the {w}x{h} grid, got {start}")
    cells = [f"loc-x{x}-y{y}" for y in range(h) for x in range(w)]
    robot = f"loc-x{start[0]}-y{start[1]}"
    init = [_atom("at-robot", robot), _atom("visited", robot)]
    for y, x in itertools.product(range(h), range(w)):
        for nx, ny in ((x + 1, y), (x, y + 1)):
            if nx < w and ny < h:
                here, there = f"loc-x{x}-y{y}", f"loc-x{nx}-y{ny}"
                init += [_atom("connected", here, there), _atom("connected", there, here)]
    return cells, init + [_atom("place", cell) for cell in cells], [_atom("visited", cell) for cell in cells]


def _sample_visitall(rng: random.Random, w: int, h: int) -> Problem:
    return _visitall_problem(w, h, (rng.randrange(w), rng.randrange(h)))


def blocks(n: int, seed: int | str = 0, name: str | None = None) -> str:
    """n blocks in random towers; the goal lists every on/ontable atom of other random towers."""
    return _pddl(PDDL_NAMES["blocks"], name or _STEMS["blocks"].format(n=n), _sample_blocks(random.Random(seed), n))


def ipc_blocksworld(n: int, seed: int | str = 0, name: str | None = None) -> str:
    """`blocks(n, seed)` in the predicate names of the IPC 2023 learning track's blocksworld domain file."""
    renamed = {"ontable": "on-table", "handempty": "arm-empty"}
    objects, init, goal = _sample_blocks(random.Random(seed), n)
    init, goal = ([_renamed(atom, renamed) for atom in atoms] for atoms in (init, goal))
    return _pddl("blocksworld", name or f"blocksworld-{n}", (objects, init, goal))


def _renamed(atom: str, names: dict[str, str]) -> str:
    predicate, *args = atom.strip("()").split()
    return _atom(names.get(predicate, predicate), *args)


def _numbered(prefix: str, count: int) -> list[str]:
    """Object names prefix1..prefixN, as the IPC generators write them."""
    return [f"{prefix}{i}" for i in range(1, count + 1)]


def ipc_ferry(cars: int, locations: int, seed: int | str = 0, name: str | None = None) -> str:
    """A problem for the IPC 2023 learning track's ferry domain file: the ferry empty, it and every car at a
    random location, each car's goal a random location."""
    if locations < 2 or cars < 1:
        raise ValueError(f"ferry needs a car and two locations, got {cars} and {locations}")
    rng = random.Random(seed)
    car_names, places = _numbered("car", cars), _numbered("loc", locations)
    objects = [*car_names, "-", "car", *places, "-", "location"]
    init = ["(empty-ferry)", _atom("at-ferry", rng.choice(places))]
    init += [_atom("at", car, rng.choice(places)) for car in car_names]
    goal = [_atom("at", car, rng.choice(places)) for car in car_names]
    return _pddl("ferry", name or f"ferry-{cars}-{locations}", (objects, init, goal))


def ipc_miconic(passengers: int, floors: int, seed: int | str = 0, name: str | None = None) -> str:
    """A problem for the IPC 2023 learning track's miconic domain file: the lift at a random floor, each
    passenger's origin and destination two random distinct floors, `above` for every pair of floors."""
    if floors < 2 or passengers < 1:
        raise ValueError(f"miconic needs a passenger and two floors, got {passengers} and {floors}")
    rng = random.Random(seed)
    people, levels = _numbered("p", passengers), _numbered("f", floors)
    objects = [*people, "-", "passenger", *levels, "-", "floor"]
    init = [_atom("lift-at", rng.choice(levels))]
    for person in people:
        origin, destination = rng.sample(levels, 2)
        init += [_atom("origin", person, origin), _atom("destin", person, destination)]
    init += [_atom("above", low, high) for low, high in itertools.combinations(levels, 2)]
    goal = [_atom("served", person) for person in people]
    return _pddl("miconic", name or f"miconic-{passengers}-{floors}", (objects, init, goal))


def ipc_satellite(
    satellites: int, instruments: int, modes: int, directions: int, seed: int | str = 0, name: str | None = None
) -> str:
    """A problem for the IPC 2023 learning track's satellite domain file: every satellite powered and pointing
    at a random direction; each instrument on a random satellite (each satellite has one while instruments
    last), calibrated at a random direction, and supporting a random nonempty set of modes (each mode by some
    instrument). The goals: images of `directions` distinct random (direction, mode) pairs, and two thirds of
    the satellites pointing at a random direction."""
    if satellites < 1 or instruments < 1 or modes < 1 or directions < 1:
        raise ValueError(f"satellite needs one of each, got {satellites}, {instruments}, {modes}, {directions}")
    rng = random.Random(seed)
    sats, tools = _numbered("sat", satellites), _numbered("ins", instruments)
    kinds, places = _numbered("mod", modes), _numbered("dir", directions)
    objects = [*sats, "-", "satellite", *tools, "-", "instrument", *kinds, "-", "mode", *places, "-", "direction"]
    init = [_atom("pointing", sat, rng.choice(places)) for sat in sats] + [_atom("power_avail", sat) for sat in sats]
    hosts = sats[:instruments] + [rng.choice(sats) for _ in range(instruments - len(sats))]
    supported = {tool: {rng.choice(kinds)} | {kind for kind in kinds if rng.random() < 0.5} for tool in tools}
    for kind in kinds:
        if not any(kind in of_tool for of_tool in supported.values()):
            supported[rng.choice(tools)].add(kind)
    for tool, host in zip(tools, hosts):
        init += [_atom("on_board", tool, host), _atom("calibration_target", tool, rng.choice(places))]
        init += [_atom("supports", tool, kind) for kind in sorted(supported[tool])]
    pairs = list(itertools.product(places, kinds))
    goal = [_atom("pointing", sat, rng.choice(places)) for sat in rng.sample(sats, 2 * satellites // 3)]
    goal += [_atom("have_image", place, kind) for place, kind in rng.sample(pairs, min(directions, len(pairs)))]
    return _pddl("satellite", name or f"satellite-{satellites}-{instruments}", (objects, init, goal))


def ipc_rovers(
    rovers: int, waypoints: int, cameras: int, objectives: int, seed: int | str = 0, name: str | None = None
) -> str:
    """A problem for the IPC 2023 learning track's rovers domain file. Waypoints see each other along a
    random connected graph (a random tree plus a third of the other pairs); each rover traverses a random
    spanning tree of it and one edge in two of the rest, so every rover reaches every waypoint. Every rover
    has a store and is equipped for soil, rock or imaging (each kind on some rover); every camera sits on an
    imaging rover, supports one to three modes and is calibrated on an objective; every objective is seen
    from one to three waypoints. The goals: the soil and rock data of some sampled waypoints, and images."""
    if rovers < 1 or waypoints < 2 or cameras < 1 or objectives < 1:
        raise ValueError(
            f"rovers needs a rover, two waypoints, a camera and an objective, got {rovers}, {waypoints}, "
            f"{cameras} and {objectives}"
        )
    rng = random.Random(seed)
    rover_names, places = _numbered("rover", rovers), _numbered("waypoint", waypoints)
    camera_names, targets = _numbered("camera", cameras), _numbered("objective", objectives)
    modes = ["colour", "high_res", "low_res"]
    stores = [f"{rover}store" for rover in rover_names]
    objects = ["general", "-", "lander", *modes, "-", "mode", *rover_names, "-", "rover", *stores, "-", "store"]
    objects += [*places, "-", "waypoint", *camera_names, "-", "camera", *targets, "-", "objective"]
    tree = {(rng.choice(places[:i]), place) for i, place in enumerate(places) if i}  # pairs in list order
    others = [pair for pair in itertools.combinations(places, 2) if pair not in tree]
    position = {place: i for i, place in enumerate(places)}
    edges = sorted(
        tree | set(rng.sample(others, len(others) // 3)), key=lambda pair: (position[pair[0]], position[pair[1]])
    )
    init = [_atom("at_lander", "general", rng.choice(places))]
    init += [_atom("visible", a, b) for x, y in edges for a, b in ((x, y), (y, x))]
    kinds = ["soil", "rock", "imaging"]
    equipped = {rover: {rng.choice(kinds)} | set(rng.sample(kinds, rng.randint(0, 2))) for rover in rover_names}
    for kind in kinds:
        if not any(kind in equipment for equipment in equipped.values()):
            equipped[rng.choice(rover_names)].add(kind)
    imaging = [rover for rover in rover_names if "imaging" in equipped[rover]]
    for rover, store in zip(rover_names, stores):
        init += [_atom("at", rover, rng.choice(places)), _atom("empty", store), _atom("store_of", store, rover)]
        init += [
            _atom(f"equipped_for_{kind}" + ("" if kind == "imaging" else "_analysis"), rover)
            for kind in kinds
            if kind in equipped[rover]
        ]
        traversed = _spanning_tree(rng, position, edges) | {pair for pair in edges if rng.random() < 0.5}
        init += [
            _atom("can_traverse", rover, a, b) for x, y in edges if (x, y) in traversed for a, b in ((x, y), (y, x))
        ]
    soil = sorted(rng.sample(places, max(1, waypoints // 2)))
    rock = sorted(rng.sample(places, max(1, waypoints // 3)))
    init += [_atom("at_soil_sample", place) for place in soil] + [_atom("at_rock_sample", place) for place in rock]
    supported: set[str] = set()
    for camera in camera_names:
        init += [
            _atom("on_board", camera, rng.choice(imaging)),
            _atom("calibration_target", camera, rng.choice(targets)),
        ]
        camera_modes = sorted(rng.sample(modes, rng.randint(1, 3)))
        supported.update(camera_modes)
        init += [_atom("supports", camera, mode) for mode in camera_modes]
    for target in targets:
        init += [
            _atom("visible_from", target, place)
            for place in sorted(rng.sample(places, min(waypoints, rng.randint(1, 3))))
        ]
    goal = [_atom("communicated_soil_data", place) for place in rng.sample(soil, (len(soil) + 1) // 2)]
    goal += [_atom("communicated_rock_data", place) for place in rng.sample(rock, (len(rock) + 1) // 2)]
    goal += [
        _atom("communicated_image_data", rng.choice(targets), rng.choice(sorted(supported)))
        for _ in range(objectives // 2 or 1)
    ]
    return _pddl(
        "rover", name or f"rovers-{rovers}-{waypoints}-{cameras}-{objectives}", (objects, init, sorted(set(goal)))
    )


def _spanning_tree(rng: random.Random, position: dict[str, int], edges: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """A random spanning tree of the connected graph `edges` (pairs ordered by `position`), grown from a
    random place."""
    places = list(position)
    neighbours: dict[str, list[str]] = {place: [] for place in places}
    for x, y in edges:
        neighbours[x].append(y)
        neighbours[y].append(x)
    start = rng.choice(places)
    reached, frontier, tree = {start}, [start], set()
    while frontier:
        place = frontier.pop(rng.randrange(len(frontier)))
        for other in neighbours[place]:
            if other not in reached:
                reached.add(other)
                frontier.append(other)
                tree.add((place, other) if position[place] < position[other] else (other, place))
    return tree


def gripper(n_balls: int, n_rooms: int = 2, seed: int | str = 0, name: str | None = None) -> str:
    """IPC gripper for 2 rooms; with more, random ball and robot rooms and a new room for every ball."""
    text_name = name or _STEMS["gripper"].format(n_balls=n_balls, n_rooms=n_rooms)
    return _pddl(PDDL_NAMES["gripper"], text_name, _sample_gripper(random.Random(seed), n_balls, n_rooms))


def logistics(
    cities: int,
    locations_per_city: int,
    packages: int,
    airplanes: int,
    goals: int,
    seed: int | str = 0,
    name: str | None = None,
) -> str:
    """One truck and one airport per city; `goals` random packages must reach a new random location."""
    size = dict(
        cities=cities, locations_per_city=locations_per_city, packages=packages, airplanes=airplanes, goals=goals
    )
    problem = _sample_logistics(random.Random(seed), **size)
    return _pddl(PDDL_NAMES["logistics"], name or _STEMS["logistics"].format(**size), problem)


def visitall(w: int, h: int, start: tuple[int, int], name: str | None = None) -> str:
    """A w x h grid to visit from `start` = (x, y), as the paper's visitall-from-everywhere files."""
    return _pddl(
        PDDL_NAMES["visitall"], name or f"grid-{w}-{h}-start-{start[0]}-{start[1]}", _visitall_problem(w, h, start)
    )


_SAMPLERS: dict[str, Callable[..., Problem]] = {
    "blocks": _sample_blocks,
    "gripper": _sample_gripper,
    "logistics": _sample_logistics,
    "visitall": _sample_visitall,
}
# File stems encode the size; `-sNN` numbers the problems of one size from 01.
_STEMS = {
    "blocks": "blocks-n{n:02d}",
    "gripper": "gripper-r{n_rooms:02d}-b{n_balls:02d}",
    "logistics": "logistics-c{cities:02d}-l{locations_per_city:02d}-p{packages:02d}-a{airplanes:02d}-g{goals:02d}",
    "visitall": "visitall-w{w:02d}h{h:02d}",
}

Rows = list[tuple[dict[str, int], int]]  # (generator arguments, number of problems)


def _logistics_rows(cities: int, packages: int, airplanes: int, goals: Sequence[int], count: int) -> Rows:
    size = {"cities": cities, "locations_per_city": 2, "packages": packages, "airplanes": airplanes}
    return [({**size, "goals": g}, count) for g in goals]


def _visitall_rows(shapes: str, starts_per_shape: int) -> Rows:
    """'w03h02 ...' -> rows with min(cells, starts_per_shape) distinct random start cells each."""
    rows = []
    for shape in shapes.split():
        w, h = int(shape[1:3]), int(shape[4:6])
        rows.append(({"w": w, "h": h}, min(w * h, starts_per_shape)))
    return rows


# The paper's sizes per split (tab:dataset_stats); logistics mirrors the city, package
# and airplane counts of the paper's problems, visitall its grid shapes, with up to
# 10 start cells per shape for training and 3 elsewhere.
DATASET: dict[str, dict[str, Rows]] = {
    "blocks": {
        "train": [({"n": 4}, 3), ({"n": 6}, 3), ({"n": 7}, 3)],
        "validation": [({"n": 8}, 3)],
        "test-interpolation": [({"n": 5}, 3)],
        "test-extrapolation": [({"n": n}, 3 if n <= 11 else 2 if n <= 16 else 1) for n in range(9, 18)],
    },
    "gripper": {
        split: [({"n_balls": n, "n_rooms": 2}, 1) for n in balls]
        for split, balls in (
            ("train", (2, 4, 6, 8)),
            ("validation", (9, 10)),
            ("test-interpolation", (3, 5, 7)),
            ("test-extrapolation", range(12, 43, 2)),
        )
    },
    "logistics": {
        "train": _logistics_rows(2, 4, 1, (1, 3), 3) + _logistics_rows(2, 6, 1, (3, 5), 3),
        "validation": _logistics_rows(2, 6, 1, (6,), 4),
        "test-interpolation": _logistics_rows(2, 4, 1, (2, 4), 3) + _logistics_rows(2, 6, 1, (4,), 3),
        "test-extrapolation": _logistics_rows(3, 9, 1, (7, 8, 9), 2)
        + _logistics_rows(4, 12, 1, (10, 11, 12), 2)
        + _logistics_rows(5, 15, 2, (13, 14, 15), 2),
    },
    "visitall": {
        "train": _visitall_rows(
            "w01h01 w01h03 w01h04 w01h06 w01h07 w01h10 w01h11 w02h02 w02h03 w02h05 w02h06 w02h07 w02h08 w03h01 "
            "w03h02 w03h04 w04h01 w04h03 w04h04 w05h02 w06h01 w06h02 w07h01 w07h02 w08h02 w10h01 w11h01",
            10,
        ),
        "validation": _visitall_rows("w02h09 w02h10 w03h06 w04h05 w05h04 w06h03 w09h02 w10h02", 3),
        "test-interpolation": _visitall_rows(
            "w01h02 w01h05 w01h08 w01h09 w02h01 w02h04 w03h03 w03h05 w04h02 w05h01 w05h03 w08h01 w09h01", 3
        ),
        "test-extrapolation": _visitall_rows(
            "w02h11 w03h07 w03h08 w03h09 w03h10 w03h11 w04h06 w04h07 w04h08 w04h09 w04h10 w04h11 w05h05 w05h06 "
            "w05h07 w05h08 w05h09 w05h10 w05h11 w06h04 w06h05 w06h06 w06h07 w06h08 w06h09 w06h10 w06h11 w07h03 "
            "w07h04 w07h05 w07h06 w07h07 w07h08 w07h09 w07h10 w07h11 w08h03 w08h04 w08h05 w08h06 w08h07 w08h08 "
            "w08h09 w08h10 w08h11 w09h03 w09h04 w09h05 w09h06 w09h07 w09h08 w09h09 w09h10 w09h11 w10h03 w10h04 "
            "w10h05 w10h06 w10h07 w10h08 w10h09 w10h10 w10h11 w11h02 w11h03 w11h04 w11h05 w11h06 w11h07 w11h08 "
            "w11h09 w11h10 w11h11",
            3,
        ),
    },
}
_MAX_DRAWS_PER_PROBLEM = 1000  # redraws allowed to find distinct problems of one size


def _check_choice(kind: str, value: str, known: Sequence[str]) -> None:
    if value not in known:
        raise InputError(None, f"unknown {kind} '{value}' (known: {', '.join(known)})")


def generate_split(domain: str, split: str, seed: int = 0) -> list[tuple[str, str]]:
    """(file name, PDDL text) of every problem of the split, sorted by file name.

    Each size draws from its own RNG seeded by (seed, domain, split, size) and redraws
    duplicates, so problems are distinct and a size's problems do not depend on the others.
    """
    _check_choice("domain", domain, DOMAINS)
    _check_choice("split", split, layout.SPLITS)
    files = []
    for size, count in DATASET[domain][split]:
        stem = _STEMS[domain].format(**size)
        rng = random.Random(f"{seed}/{domain}/{split}/{stem}")
        found: dict[tuple[frozenset[str], frozenset[str]], Problem] = {}
        for _ in range(_MAX_DRAWS_PER_PROBLEM * count):
            problem = _SAMPLERS[domain](rng, **size)
            found.setdefault((frozenset(problem[1]), frozenset(problem[2])), problem)
            if len(found) == count:
                break
        else:
            raise ValueError(f"{stem}: could not draw {count} distinct problems")
        for index, problem in enumerate(found.values(), 1):
            files.append((f"{stem}-s{index:02d}.pddl", _pddl(PDDL_NAMES[domain], f"{stem}-s{index:02d}", problem)))
    return sorted(files)


def write_dataset(
    out_root: str | os.PathLike,
    domains: Sequence[str] = DOMAINS,
    splits: Sequence[str] = layout.SPLITS,
    seed: int = 0,
) -> list[pathlib.Path]:
    """Write `out_root/domains/<domain>/{domain.pddl,<split>/*.pddl}`; returns the problem files.

    Everything is generated before anything is written, so a bad domain or split name
    writes nothing. Stale *.pddl files in a written split folder are removed, so the
    folder holds exactly the split.
    """
    generated = {(domain, split): generate_split(domain, split, seed) for domain in domains for split in splits}
    written = []
    for (domain, split), files in generated.items():
        base = pathlib.Path(out_root) / "domains" / domain
        (base / split).mkdir(parents=True, exist_ok=True)
        write_text(base / "domain.pddl", domain_text(domain))
        names = {file_name for file_name, _ in files}
        for stale in (base / split).glob("*.pddl"):
            if stale.name not in names:
                stale.unlink()
        for file_name, text in files:
            write_text(base / split / file_name, text)
            written.append(base / split / file_name)
    return written
