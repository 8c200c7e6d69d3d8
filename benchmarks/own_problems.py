"""Our own larger problems, seeded, by split: what `benchmarks.generalization` selects and confirms
settings on and `benchmarks.search_speed` times. Written as `<root>/<domain>/{domain.pddl,<split>/*.pddl}`."""

from __future__ import annotations

import pathlib
from typing import Any

from statecentric_jax.atomic import write_text
from statecentric_jax.errors import InputError
from statecentric_jax.problems import generators
from statecentric_jax.problems.domains import domain_text

# Our own problems, seeded: `large` at about twice the paper's largest extrapolation sizes; `medium`
# (Logistics only) at its extrapolation sizes, where every setting fails all large problems alike.
OWN_PROBLEMS: dict[str, dict[str, list[tuple[str, dict[str, Any]]]]] = {
    "large": {
        "blocks": [("blocks", dict(n=n, seed=s)) for n in (20, 24, 28, 34) for s in (1, 2)],
        "gripper": [("gripper", dict(n_balls=n, n_rooms=2)) for n in (50, 60, 70, 84)]
        + [("gripper", dict(n_balls=n, n_rooms=3, seed=n)) for n in (12, 20, 30)],  # a shape never trained on
        "logistics": [
            ("logistics", dict(cities=c, locations_per_city=2, packages=p, airplanes=a, goals=g, seed=s))
            for c, p, a, g in ((6, 18, 2, 16), (8, 24, 2, 22), (10, 30, 3, 28))
            for s in (1, 2)
        ],
        "visitall": [
            ("visitall", dict(w=w, h=w, start=start)) for w in (14, 15, 16) for start in ((0, 0), (w // 2, 3))
        ],
    },
    "medium": {
        "logistics": [
            ("logistics", dict(cities=c, locations_per_city=2, packages=p, airplanes=a, goals=g, seed=s))
            for c, p, a, g in ((4, 10, 1, 9), (5, 12, 2, 11), (5, 14, 2, 13))
            for s in (1, 2, 3, 4)
        ],
    },
    # `large-more`: Blocks at the `large` sizes with other seeds, to select on more than 8 problems.
    "large-more": {
        "blocks": [("blocks", dict(n=n, seed=s)) for n in (20, 24, 28, 34) for s in (5, 6, 7, 8)],
    },
    # `held-out`: more problems of the `large` sizes (other seeds, sizes and starts), never used to
    # select a setting; decoded once with the settings chosen on the other splits, to confirm them.
    "held-out": {
        "blocks": [("blocks", dict(n=n, seed=s)) for n in (22, 26, 30, 32) for s in (3, 4)],
        "gripper": [("gripper", dict(n_balls=n, n_rooms=2)) for n in (55, 65, 75, 90)]
        + [("gripper", dict(n_balls=n, n_rooms=3, seed=n)) for n in (15, 25, 35)],
        "logistics": [
            ("logistics", dict(cities=c, locations_per_city=2, packages=p, airplanes=a, goals=g, seed=s))
            for c, p, a, g in ((6, 18, 2, 16), (8, 24, 2, 22), (10, 30, 3, 28))
            for s in (3, 4)
        ],
        "visitall": [
            ("visitall", dict(w=w, h=w, start=start)) for w in (14, 15, 16) for start in ((w - 1, w - 1), (2, w - 3))
        ],
    },
    # `held-out-2`: problems of the held-out sizes with other seeds, written after `held-out` had been
    # read for two settings of the domain; read once, for the setting chosen after those.
    "held-out-2": {
        "blocks": [("blocks", dict(n=n, seed=s)) for n in (22, 26, 30, 32) for s in (5, 6)],
        # Logistics: written after `held-out` had been read for two goal-path settings.
        "logistics": [
            ("logistics", dict(cities=c, locations_per_city=2, packages=p, airplanes=a, goals=g, seed=s))
            for c, p, a, g in ((6, 18, 2, 16), (8, 24, 2, 22), (10, 30, 3, 28))
            for s in (5, 6)
        ],
    },
    # `held-out-3`: 24 more Blocks problems of the held-out sizes, written (first as a selection split) after
    # the current Blocks setting was chosen; that setting solved all of them, so nothing was chosen on them.
    "held-out-3": {
        "blocks": [("blocks", dict(n=n, seed=s)) for n in (22, 26, 30, 32) for s in (9, 10, 11, 12, 13, 14)],
        # Logistics: written after `held-out-2` had been read, when a greedy queue had done better on `large`;
        # read once for the setting before it and once with it.
        "logistics": [
            ("logistics", dict(cities=c, locations_per_city=2, packages=p, airplanes=a, goals=g, seed=s))
            for c, p, a, g in ((6, 18, 2, 16), (8, 24, 2, 22), (10, 30, 3, 28))
            for s in (7, 8)
        ],
    },
    # `held-out-4`: Logistics, written after `held-out-3` had been read, when a budget of 320,000 was the candidate.
    "held-out-4": {
        "logistics": [
            ("logistics", dict(cities=c, locations_per_city=2, packages=p, airplanes=a, goals=g, seed=s))
            for c, p, a, g in ((6, 18, 2, 16), (8, 24, 2, 22), (10, 30, 3, 28))
            for s in (9, 10)
        ],
    },
}


def write_own_problems(root: pathlib.Path, domain: str, split: str) -> None:
    """One split of our own problems, as `<root>/<domain>/{domain.pddl,<split>/*.pddl}` (deterministic)."""
    if domain not in OWN_PROBLEMS[split]:
        raise InputError(None, f"--splits={split}: no {split} problems of our own for {domain}")
    folder = root / domain / split
    folder.mkdir(parents=True, exist_ok=True)
    write_text(root / domain / "domain.pddl", domain_text(domain))
    for index, (generator, arguments) in enumerate(OWN_PROBLEMS[split][domain]):
        name = f"{domain}-{split}-{index:02d}"
        write_text(folder / f"{name}.pddl", getattr(generators, generator)(**arguments, name=name))
