"""Table 1 from the run directories of a sweep, beside the paper's published figures.

Reads `<sweep_dir>/<run>/seed<N>/{config.json, eval/<split>/summary.json, results.json}`;
a run's Table 1 cell is given by its recorded config (domain, encoding, model,
mode), not by its folder name. Writes into the output folder:

  table1.md, table1.csv              success rate mean±std over seeds, the paper's value and the difference
  plan_quality.md, plan_quality.csv  decoded plan length / Fast Downward plan length
  failures.md, failures.csv          why unsolved problems failed: dead end, horizon or other
  success_by_split.png               bars per configuration and split, one panel per domain
  success_vs_size.png                extrapolation success vs number of objects, one panel per domain
  beyond_paper.md, beyond_paper.csv  per domain and split: the paper's best column (published, and our
                                     reproduction), the recommended `<domain>_best` runs and ablation rows
  beyond_quality.md, .csv            the same rows: plan length vs Fast Downward, decode seconds per problem
                                     and its ratio to the reproduced paper's best

Table 1, plan quality, failures and the plots hold the paper's method only: runs whose config
adds nothing beyond it (`ingredients`: a search strategy other than beam, a cost-to-go, expert
data aggregation, an ensemble, an exploration queue, a goal agenda, action elimination). The runs that add
something are in the beyond-the-paper table; novelty exploration, the goal agenda and action elimination,
symbolic, are named in their rows.

Everything is sorted and formatted with fixed precision, so the same runs give
byte-identical files (docs/results.md's table is `table1.md`).
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import io
import json
import os
import pathlib
from collections.abc import Callable, Sequence

import matplotlib.artist
import matplotlib.lines
import matplotlib.patches
import ml_collections
import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from statecentric_jax import config as config_lib
from statecentric_jax.atomic import replace_atomically, write_text
from statecentric_jax.errors import InputError
from statecentric_jax.learning import ensemble, train
from statecentric_jax.method import config as method_config
from statecentric_jax.method import pipeline
from statecentric_jax.problems.domains import PAPER_ORDER
from statecentric_jax.problems.fast_downward import ASTAR_LMCUT
from statecentric_jax.problems.plan_generation import read_trajectories

PAPER_CSV = pathlib.Path(__file__).with_name("paper_table1.csv")  # the published Table 1, as package data
DOMAIN_TITLES = {"blocks": "Blocks", "gripper": "Gripper", "visitall": "VisitAll", "logistics": "Logistics"}
SPLITS = pipeline.EVALUATION_SPLITS
SPLIT_TITLES = {"validation": "Val.", "test-interpolation": "Interp.", "test-extrapolation": "Extrap."}
ROUNDING = 0.005  # the paper prints two decimals: differences within rounding are not flagged
FLAG = "†"
RECORD_KEYS = ("problem", "num_objects", "solved", "plan_length")  # what the report reads of results.json
FAILURES = ("dead end", "horizon")  # the decoder's own stopping reasons; anything else counts as "other"
ABLATION = ("strategy", "value", "aggregation", "ensemble")  # the ablated ingredients: "all" in a row's name
# what a run adds to the paper's method; the symbolic ones are named in their rows
INGREDIENTS = (
    *ABLATION,
    "type exploration",
    "preferred exploration",
    "greedy exploration",
    "novelty (symbolic)",
    "goal agenda (symbolic)",
    "action elimination (symbolic)",
    "dead-end pruning (symbolic)",
)


@dataclasses.dataclass(frozen=True, order=True)
class Column:
    """A state-centric column of Table 1, named as in the paper's CSV."""

    system: str  # "WL-LSTM"
    variant: str  # "state" or "delta"

    @property
    def label(self) -> str:
        return f"{self.system} {self.variant}"


COLUMNS = tuple(
    Column(f"{enc}-{kind}", mode) for enc in ("WL", "FSF") for kind in ("LSTM", "XGB") for mode in ("state", "delta")
)


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """One seed of one configuration evaluated on one split."""

    domain: str
    column: Column
    seed: int
    split: str
    run: str
    success_rate: float
    records: list  # results.json: one dict per problem
    pddl_root: str
    plans_dir: pathlib.Path  # where Fast Downward plans of this run's PDDL root are cached
    ingredients: tuple[str, ...] = ()  # what the run adds to the paper's method (INGREDIENTS); () for Table 1


@dataclasses.dataclass(frozen=True)
class Stat:
    """Mean and (population, as in the paper) standard deviation over seeds."""

    mean: float
    std: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat:
        return cls(float(np.mean(values)), float(np.std(values)), len(values))

    def text(self) -> str:
        return f"{self.mean:.2f}±{self.std:.2f}"


def _read_json(path: pathlib.Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(path, f"cannot read ({e.strerror or e})") from None
    except ValueError as e:
        raise InputError(path, f"not valid JSON ({e})") from None


def ingredients(config: ml_collections.ConfigDict, seed_dir: pathlib.Path) -> tuple[str, ...]:
    """What a run adds to the paper's method, in INGREDIENTS order; () for a Table 1 configuration."""
    exploration = config.decode.get("exploration", "none")
    added = {
        "strategy": config.decode.get("strategy", "beam") != "beam",
        "value": config.value.kind != "none",
        "aggregation": method_config.aggregates(config),
        "ensemble": (seed_dir / ensemble.ENSEMBLE_FILE).is_file(),
        "type exploration": exploration == "type",
        "preferred exploration": exploration == "preferred",
        "greedy exploration": exploration == "greedy",
        "novelty (symbolic)": exploration == "novelty",
        "goal agenda (symbolic)": config.decode.get("goal_agenda", 0) > 0,
        "action elimination (symbolic)": bool(config.decode.get("action_elimination", False)),
        "dead-end pruning (symbolic)": bool(config.decode.get("prune_dead_ends", False)),
    }
    return tuple(name for name in INGREDIENTS if added[name])


def collect(sweep_dir: str | os.PathLike, beyond: bool = False) -> list[Evaluation]:
    """Every finished seed x split evaluation of the paper's method under `sweep_dir` (with `beyond`: of
    every run), sorted; refuses two runs of one Table 1 cell."""
    sweep_dir = pathlib.Path(sweep_dir)
    if not sweep_dir.is_dir():
        raise InputError(sweep_dir, "no such sweep directory")
    found: dict[tuple, Evaluation] = {}
    for seed_dir in sorted(sweep_dir.glob(f"*/seed*/{train.CONFIG_FILE}")):
        seed_dir = seed_dir.parent
        config = config_lib.read(seed_dir)
        added = ingredients(config, seed_dir)
        if added and not beyond:
            continue
        column = Column(f"{config.data.encoding.upper()}-{config.model.kind.upper()}", config.model.mode)
        plans_dir = pipeline.cache_dirs(config)[0]
        for summary_file in sorted(seed_dir.glob("eval/*/summary.json")):
            split = summary_file.parent.name
            summary, records = _read_json(summary_file), _read_json(summary_file.parent / "results.json")
            try:
                rate = float(summary["success_rate"])
            except (KeyError, TypeError, ValueError):
                raise InputError(summary_file, "no success_rate") from None
            if not isinstance(records, list) or not all(
                isinstance(r, dict) and set(RECORD_KEYS) <= set(r) for r in records
            ):
                raise InputError(
                    summary_file.parent / "results.json", f"expected a list of records with {', '.join(RECORD_KEYS)}"
                )
            evaluation = Evaluation(
                config.data.domain,
                column,
                int(config.seed),
                split,
                seed_dir.parent.name,
                rate,
                records,
                config.data.pddl_root,
                plans_dir,
                added,
            )
            key = (evaluation.domain, column, evaluation.seed, split) + ((evaluation.run,) if added else ())
            if key in found:
                raise InputError(
                    seed_dir,
                    f"{column.label} {split} seed {evaluation.seed} of {evaluation.domain}"
                    f" is also in run '{found[key].run}'",
                )
            found[key] = evaluation
    if not found:
        raise InputError(sweep_dir, "no finished evaluations (<run>/seed<N>/eval/<split>/summary.json)")
    return [
        found[k]
        for k in sorted(
            found,
            key=lambda k: (_order(PAPER_ORDER, k[0]), _order(COLUMNS, k[1]), k[4:], k[2], _order(SPLITS, k[3])),
        )
    ]


def _order(known: Sequence, item) -> tuple:
    """Sort key: the paper's order first, then anything else by name."""
    return (known.index(item), "") if item in known else (len(known), str(item))


def read_paper(path: str | os.PathLike) -> dict[tuple[str, str, Column], Stat]:
    """The paper's Table 1 (domain,split,system,variant,mean,std; '#' lines are comments)."""
    try:
        lines = [
            line for line in pathlib.Path(path).read_text(encoding="utf-8").splitlines() if not line.startswith("#")
        ]
    except OSError as e:
        raise InputError(path, f"cannot read the paper's table ({e.strerror or e})") from None
    paper = {}
    for lineno, row in enumerate(csv.DictReader(lines), 2):
        try:
            paper[(row["domain"], row["split"], Column(row["system"], row["variant"]))] = Stat(
                float(row["mean"]), float(row["std"]), 0
            )
        except (KeyError, TypeError, ValueError):
            raise InputError(
                path, f"row {lineno}: expected columns domain,split,system,variant,mean,std with numbers"
            ) from None
    return paper


def _rows(evaluations: Sequence[Evaluation]) -> list[tuple[str, str]]:
    """(domain, split) rows of the table: the paper's order, domains with at least one run."""
    domains = sorted({e.domain for e in evaluations}, key=lambda d: _order(PAPER_ORDER, d))
    splits = sorted({e.split for e in evaluations}, key=lambda s: _order(SPLITS, s))
    return [(domain, split) for domain in domains for split in splits]


def _columns(evaluations: Sequence[Evaluation]) -> list[Column]:
    """The paper's eight columns, then any other configuration found."""
    return list(COLUMNS) + sorted({e.column for e in evaluations} - set(COLUMNS), key=lambda c: c.label)


def _group(evaluations: Sequence[Evaluation]) -> dict[tuple[str, str, Column], list[Evaluation]]:
    groups: dict[tuple, list[Evaluation]] = {}
    for e in evaluations:
        groups.setdefault((e.domain, e.split, e.column), []).append(e)
    return groups


def _markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows]) + "\n"


def _csv(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _grid(
    evaluations: Sequence[Evaluation],
    cell: Callable[[str, str, Column, list[Evaluation]], tuple[str, list[str]]],
    fields: Sequence[str],
) -> tuple[list[list[str]], list[list[str]], list[str], list[str]]:
    """Table-1-shaped markdown and CSV rows: `cell` gives each cell's markdown text and CSV values."""
    groups, columns = _group(evaluations), _columns(evaluations)
    md_rows, csv_rows = [], []
    for domain, split in _rows(evaluations):
        md_row = [DOMAIN_TITLES.get(domain, domain), SPLIT_TITLES.get(split, split)]
        csv_row = [domain, split]
        for column in columns:
            text, values = cell(domain, split, column, groups.get((domain, split, column), []))
            md_row.append(text)
            csv_row.extend(values)
        md_rows.append(md_row)
        csv_rows.append(csv_row)
    md_header = ["Domain", "Split"] + [c.label for c in columns]
    csv_header = ["domain", "split"] + [f"{c.label} {field}" for c in columns for field in fields]
    return md_rows, csv_rows, md_header, csv_header


def _differs(ours: Stat, paper: Stat) -> bool:
    return abs(ours.mean - paper.mean) > paper.std + ours.std + ROUNDING


def _delta(ours: Stat, paper: Stat) -> str:
    delta = ours.mean - paper.mean
    return "+0.00" if abs(delta) < ROUNDING else f"{delta:+.2f}"


def success_table(evaluations: Sequence[Evaluation], paper: dict[tuple[str, str, Column], Stat]) -> tuple[str, str]:
    """(markdown, CSV) of Table 1: each cell 'ours mean±std (paper mean±std, Δ +x.xx)'."""
    full = max(len(group) for group in _group(evaluations).values())

    def cell(domain: str, split: str, column: Column, group: list[Evaluation]) -> tuple[str, list[str]]:
        theirs = paper.get((domain, split, column))
        ours = Stat.of([e.success_rate for e in group]) if group else None
        paper_values = [f"{theirs.mean:.2f}", f"{theirs.std:.2f}"] if theirs else ["", ""]
        if ours is None:
            return (f"— ({theirs.text()})" if theirs else "—"), ["", "", "0", *paper_values, "", ""]
        text = ours.text()
        if theirs:
            text += f" ({theirs.text()}, Δ {_delta(ours, theirs)})" + (f" {FLAG}" if _differs(ours, theirs) else "")
        if ours.n < full:
            text += f" [n={ours.n}]"
        delta = [_delta(ours, theirs), str(int(_differs(ours, theirs)))] if theirs else ["", ""]
        return text, [f"{ours.mean:.4f}", f"{ours.std:.4f}", str(ours.n), *paper_values, *delta]

    md_rows, csv_rows, md_header, csv_header = _grid(
        evaluations, cell, ("mean", "std", "seeds", "paper mean", "paper std", "delta", "differs")
    )
    roots = ", ".join(sorted({os.path.basename(os.path.normpath(e.pddl_root)) for e in evaluations}))
    legend = (
        f"\nSuccess rate on {roots}, mean±std over {full} seed{'s' if full > 1 else ''}"
        " ([n=k]: only k seeds finished); in parentheses the paper's"
        f" Table 1 value and Δ = ours − paper; {FLAG}: |Δ| > paper std + our std"
        f" (+{ROUNDING} for the paper's rounding);"
        " —: not run.\n"
    )
    return _markdown(md_header, md_rows) + legend, _csv(csv_header, csv_rows)


def _stem(problem_file: str) -> str:
    """Decoded results and FD trajectories agree on the problem file, not on the PDDL problem name."""
    return pathlib.PurePath(problem_file).stem


def _fd_lengths(path: pathlib.Path, cache: dict) -> dict[str, tuple[int, bool]] | None:
    """Per problem file (by stem) of a split: Fast Downward's plan length and whether A*+LM-cut found it
    (optimal; read from the split's manifest.json), or None where no plans were generated."""
    if path not in cache:
        manifest = path.parent / "manifest.json"
        optimal = (
            {_stem(p["problem_file"]) for p in _read_json(manifest)["problems"] if p.get("config") == ASTAR_LMCUT}
            if manifest.is_file()
            else set()
        )
        cache[path] = (
            {
                _stem(t["problem_file"]): (len(t["plan"]), _stem(t["problem_file"]) in optimal)
                for t in read_trajectories(path)
            }
            if path.is_file()
            else None
        )
    return cache[path]


def _length_ratios(
    group: Sequence[Evaluation], fd_plans_dir: str | os.PathLike | None, cache: dict, optimal_only: bool = False
) -> tuple[list[float], bool]:
    """Decoded / Fast Downward plan length per solved (seed, problem) pair (with `optimal_only`: where A*+LM-cut
    proved Fast Downward's plan optimal), and whether any FD plans were found.

    A split's Fast Downward plans come from `fd_plans_dir` where it has them, else from the run's plans
    cache (which experiments fill for train and validation only)."""
    ratios, with_fd = [], False
    for e in group:
        bases = ([pathlib.Path(fd_plans_dir)] if fd_plans_dir is not None else []) + [e.plans_dir]
        files = [base / e.domain / e.split / "trajectories.jsonl" for base in bases]
        fd = _fd_lengths(next((f for f in files if f.is_file()), files[-1]), cache)
        with_fd |= fd is not None
        for r in e.records:
            length, optimal = (fd or {}).get(_stem(r["problem_file"]), (0, False))
            if r["solved"] and length and (optimal or not optimal_only):
                ratios.append(r["plan_length"] / length)
    return ratios, with_fd


def plan_quality(evaluations: Sequence[Evaluation], fd_plans_dir: str | os.PathLike | None = None) -> tuple[str, str]:
    """(markdown, CSV): mean decoded / Fast Downward plan length over (seed, problem) pairs solved by both."""
    cache: dict = {}

    def cell(domain: str, split: str, column: Column, group: list[Evaluation]) -> tuple[str, list[str]]:
        ratios, with_fd = _length_ratios(group, fd_plans_dir, cache)
        if not ratios:
            return ("n/a" if group else "—"), ["n/a" if group else "", "0", str(int(with_fd))]
        ratio = sum(ratios) / len(ratios)
        return f"{ratio:.2f} (n={len(ratios)})", [f"{ratio:.4f}", str(len(ratios)), "1"]

    md_rows, csv_rows, md_header, csv_header = _grid(evaluations, cell, ("ratio", "pairs", "fd plans"))
    legend = (
        "\nMean plan length ratio decoded / Fast Downward over the (seed, problem) pairs solved by both"
        " (n = number of pairs; > 1: longer than Fast Downward's plans); n/a: no such pair, because nothing"
        " was solved or the plans cache has no Fast Downward plans for the split (experiments plan train and"
        " validation; test splits need `launch/generate_plans.py --splits=...` and `report.py --fd_plans_dir`);"
        " —: not run.\n"
    )
    return _markdown(md_header, md_rows) + legend, _csv(csv_header, csv_rows)


def failure_table(evaluations: Sequence[Evaluation]) -> tuple[str, str]:
    """(markdown, CSV): unsolved / problems over seeds, split by the decoder's reason for stopping."""

    def cell(domain: str, split: str, column: Column, group: list[Evaluation]) -> tuple[str, list[str]]:
        if not group:
            return "—", [""] * (len(FAILURES) + 3)
        records = [r for e in group for r in e.records]
        reasons = collections.Counter(
            r.get("outcome") if r.get("outcome") in FAILURES else "other" for r in records if not r["solved"]
        )
        counts = [reasons[reason] for reason in (*FAILURES, "other")]
        named = [f"{reason} {n}" for reason, n in zip((*FAILURES, "other"), counts) if n]
        text = f"{sum(counts)}/{len(records)}" + (": " + ", ".join(named) if named else "")
        return text, [str(len(records)), str(sum(counts)), *(str(n) for n in counts)]

    md_rows, csv_rows, md_header, csv_header = _grid(evaluations, cell, ("problems", "unsolved", *FAILURES, "other"))
    legend = (
        "\nUnsolved / decoded problems, summed over seeds, with why decoding stopped: dead end (every successor"
        " of every beam path was already visited on that path), horizon (the step limit), other (an instance"
        " that could not be loaded or encoded, or a plan that failed the final check); —: not run.\n"
    )
    return _markdown(md_header, md_rows) + legend, _csv(csv_header, csv_rows)


def paper_best(paper: dict[tuple[str, str, Column], Stat], domain: str) -> Column | None:
    """The paper's best state-centric column for a domain: highest extrapolation, then validation and
    interpolation success (the paper's column order breaks ties)."""

    def key(column: Column) -> tuple[float, ...]:  # lower is better; extrapolation first
        stats = [paper.get((domain, split, column)) for split in SPLITS[::-1]]
        return tuple(-stat.mean if stat is not None else 1.0 for stat in stats)

    listed = [c for c in COLUMNS if any((domain, split, c) in paper for split in SPLITS)]
    return min(listed, key=key) if listed else None


def _ingredients_label(added: tuple[str, ...], config_note: str) -> str:
    if set(ABLATION) <= set(added):
        return " + ".join(["all", *added[len(ABLATION) :]]) + config_note
    return " + ".join(added) + (" only" if len(added) == 1 else "") + config_note


def _beyond_rows(
    evaluations: Sequence[Evaluation], domain: str, best: Column | None
) -> list[tuple[str, str, tuple[str, ...], list[Evaluation]]]:
    """(system, run, ingredients, evaluations) per row of a domain: the paper's best column as reproduced
    here; the paper's method with each other model that a run beyond the paper builds on; the recommended
    `<domain>_best` run; the other runs beyond the paper (fewest additions first)."""
    mine = [e for e in evaluations if e.domain == domain]
    beyond_runs = sorted(
        {(e.run, e.ingredients, e.column) for e in mine if e.ingredients},
        key=lambda r: (r[0] != f"{domain}_best", len(r[1]), [INGREDIENTS.index(i) for i in r[1]], r[0]),
    )
    rows: list[tuple[str, str, tuple[str, ...], list[Evaluation]]] = []
    for column in ([best] if best is not None else []) + sorted({c for *_, c in beyond_runs} - {best}):
        ours = [e for e in mine if not e.ingredients and e.column == column]
        if column == best:
            rows.append((f"paper's best, reproduced ({column.label})", _runs(ours), (), ours))
        elif ours:
            rows.append((f"paper's method ({column.label})", _runs(ours), (), ours))
    for run, added, column in beyond_runs:
        note = f", {column.label}" if column != best else ""
        system = ("recommended: " if run == f"{domain}_best" else "") + _ingredients_label(added, note)
        rows.append((system, run, added, [e for e in mine if e.run == run]))
    return rows


def _domains(evaluations: Sequence[Evaluation]) -> tuple[list[str], list[str]]:
    splits = sorted({e.split for e in evaluations}, key=lambda s: _order(SPLITS, s))
    return sorted({e.domain for e in evaluations}, key=lambda d: _order(PAPER_ORDER, d)), splits


def beyond_table(evaluations: Sequence[Evaluation], paper: dict[tuple[str, str, Column], Stat]) -> tuple[str, str]:
    """(markdown, CSV): per domain, the paper's best column as published and as we reproduce it, the
    recommended configuration (runs named `<domain>_best`) and every other run beyond the paper (ablation
    rows, named by what they add), with success mean±std over seeds per split; —: not run."""
    domains, splits = _domains(evaluations)
    md_rows, csv_rows = [], []
    for domain in domains:
        best = paper_best(paper, domain)
        rows: list[tuple[str, str, str, dict[str, Stat]]] = []  # (system, run, ingredients, split -> stat)
        if best is not None:
            published = {s: paper[(domain, s, best)] for s in splits if (domain, s, best) in paper}
            rows.append((f"paper's best, published ({best.label})", "", "", published))
        for system, run, added, group in _beyond_rows(evaluations, domain, best):
            rows.append((system, run, "+".join(added), _stats(group, splits)))
        full = max((s.n for *_, stats in rows for s in stats.values()), default=0)
        for system, run, names, stats in rows:
            md_rows.append(
                [DOMAIN_TITLES.get(domain, domain), system + (f" `{run}`" if run else "")]
                + [_stat_text(stats.get(s), full if run else 0) for s in splits]
            )
            csv_rows.append([domain, system, run, names, *(v for s in splits for v in _stat_values(stats.get(s)))])
    md_header = ["Domain", "System"] + [SPLIT_TITLES.get(s, s) for s in splits]
    csv_header = ["domain", "system", "run", "ingredients"]
    csv_header += [f"{s} {field}" for s in splits for field in ("mean", "std", "seeds")]
    legend = (
        "\nBeyond the paper: success rate mean±std over seeds ([n=k]: only k seeds) per split. The paper's best"
        " state-centric column per domain (highest extrapolation success in its Table 1) as published and as"
        " reproduced here (the same configuration); `<domain>_best` runs are the recommended configuration; the"
        " other rows add one or more of: a search strategy other than beam, a learned cost-to-go (value), expert"
        " data aggregation, an ensemble, an exploration queue (type, the transition model's preferred successors,"
        " greedy: the priority without its path term, or novelty: a symbolic signal), a goal agenda"
        " (stages of one more goal each in the task relevant to them: a symbolic decomposition), action"
        " elimination (the steps a solved plan does not need dropped: symbolic post-processing); —: not run.\n"
    )
    return _markdown(md_header, md_rows) + legend, _csv(csv_header, csv_rows)


def beyond_quality(
    evaluations: Sequence[Evaluation],
    paper: dict[tuple[str, str, Column], Stat],
    fd_plans_dir: str | os.PathLike | None = None,
) -> tuple[str, str]:
    """(markdown, CSV): for the rows of the beyond-the-paper table, per split, the mean plan length ratio
    against Fast Downward (as `plan_quality`) and the decode time per problem against the paper's method
    with the same model on the same problems (all seeds, solved or not)."""
    domains, splits = _domains(evaluations)
    cache: dict = {}
    md_rows, csv_rows = [], []
    for domain in domains:
        rows = _beyond_rows(evaluations, domain, paper_best(paper, domain))
        beam: dict[tuple[Column, str], float] = {}  # the paper's method: seconds per problem per model and split
        for system, run, added, group in (row for row in rows if row[3]):
            md_row, csv_row = [DOMAIN_TITLES.get(domain, domain), f"{system} `{run}`"], [domain, system, run]
            for split in splits:
                in_split = [e for e in group if e.split == split]
                ratios, _ = _length_ratios(in_split, fd_plans_dir, cache)
                optimal, _ = _length_ratios(in_split, fd_plans_dir, cache, optimal_only=True)
                seconds = [r["seconds"] for e in in_split for r in e.records if "seconds" in r]
                per_problem = sum(seconds) / len(seconds) if seconds else None
                column = group[0].column
                if not added and per_problem:
                    beam[(column, split)] = per_problem
                reference = beam.get((column, split)) if added else None
                versus = per_problem / reference if per_problem is not None and reference else None
                length = f"{np.mean(ratios):.2f} (n={len(ratios)})" if ratios else "n/a" if in_split else "—"
                if optimal:
                    length += f", {np.mean(optimal):.2f} vs optimal (n={len(optimal)})"
                speed = "—" if per_problem is None else f"{per_problem:.2f} s"
                md_row.append(f"{length}; {speed}" + (f" ({versus:.2f}×)" if versus is not None else ""))
                csv_row += [
                    f"{np.mean(ratios):.4f}" if ratios else "",
                    str(len(ratios)),
                    f"{np.mean(optimal):.4f}" if optimal else "",
                    str(len(optimal)),
                    f"{per_problem:.4f}" if per_problem is not None else "",
                    f"{versus:.4f}" if versus is not None else "",
                ]
            md_rows.append(md_row)
            csv_rows.append(csv_row)
    md_header = ["Domain", "System"] + [SPLIT_TITLES.get(s, s) for s in splits]
    csv_header = ["domain", "system", "run"]
    csv_header += [
        f"{s} {f}"
        for s in splits
        for f in ("length ratio", "pairs", "optimal length ratio", "optimal pairs", "seconds per problem", "time ratio")
    ]
    legend = (
        "\nPer split: mean plan length / Fast Downward's over the (seed, problem) pairs solved by both (n pairs;"
        " n/a: no Fast Downward plans or nothing solved), then over the pairs where A*+LM-cut proved Fast"
        " Downward's plan optimal; mean decode seconds per problem over all seeds and"
        " problems (a problem's `seconds`: from its admission into the decoding batch to its end, solved or"
        " not), and in parentheses that time / the paper's method (beam) with the same model on the same"
        " split. Times are wall-clock on the machine that ran each evaluation; compare them only within one sweep.\n"
    )
    return _markdown(md_header, md_rows) + legend, _csv(csv_header, csv_rows)


def _runs(group: Sequence[Evaluation]) -> str:
    return ",".join(sorted({e.run for e in group}))


def _stats(group: Sequence[Evaluation], splits: Sequence[str]) -> dict[str, Stat]:
    return {
        split: Stat.of([e.success_rate for e in group if e.split == split])
        for split in splits
        if any(e.split == split for e in group)
    }


def _stat_values(stat: Stat | None) -> tuple[str, str, str]:
    return (f"{stat.mean:.4f}", f"{stat.std:.4f}", str(stat.n)) if stat is not None else ("", "", "0")


def _stat_text(stat: Stat | None, full: int) -> str:
    if stat is None:
        return "—"
    return stat.text() + (f" [n={stat.n}]" if stat.n < full else "")


def _colors(evaluations: Sequence[Evaluation]) -> dict[Column, tuple]:
    """Fixed paired colours in the paper's column order: one hue per system, dark for state, light for delta."""
    tab20 = colormaps["tab20"]
    return {column: tab20(i % 20) for i, column in enumerate(_columns(evaluations))}


def _panels(count: int) -> tuple[Figure, list]:
    figure = Figure(figsize=(4.5 * count, 3.6), layout="constrained")
    axes = figure.subplots(1, count, squeeze=False)[0]
    return figure, list(axes)


def _save(figure: Figure, path: pathlib.Path) -> None:
    replace_atomically(path, lambda tmp: figure.savefig(tmp, format="png", dpi=120, metadata={"Software": None}))


def plot_success_by_split(evaluations: Sequence[Evaluation], paper: dict, path: pathlib.Path) -> None:
    """Grouped bars (mean ± std over seeds) per split and configuration, one panel per domain; paper values as ticks."""
    groups, rows = _group(evaluations), _rows(evaluations)
    columns = [c for c in _columns(evaluations) if any(c == e.column for e in evaluations)]
    domains = list(dict.fromkeys(d for d, _ in rows))
    splits = list(dict.fromkeys(s for _, s in rows))
    colors, width = _colors(evaluations), 0.8 / len(columns)
    figure, axes = _panels(len(domains))
    for ax, domain in zip(axes, domains, strict=True):
        for i, column in enumerate(columns):
            xs, stats, paper_xs, paper_ys = [], [], [], []
            for j, split in enumerate(splits):
                x = j - 0.4 + width * (i + 0.5)
                if (domain, split, column) in groups:
                    xs.append(x)
                    stats.append(Stat.of([e.success_rate for e in groups[(domain, split, column)]]))
                if (domain, split, column) in paper:
                    paper_xs.append(x)
                    paper_ys.append(paper[(domain, split, column)].mean)
            ax.bar(
                xs,
                [s.mean for s in stats],
                width,
                yerr=[s.std for s in stats],
                color=colors[column],
                error_kw={"elinewidth": 0.8, "ecolor": "dimgray"},
            )
            ax.hlines(
                paper_ys,
                [x - width / 2 for x in paper_xs],
                [x + width / 2 for x in paper_xs],
                color="crimson",
                linewidth=2,
            )
        ax.set_xticks(range(len(splits)), [SPLIT_TITLES.get(s, s) for s in splits])
        ax.set_ylim(0, 1.05)
        ax.set_title(DOMAIN_TITLES.get(domain, domain))
        ax.set_ylabel("success rate")
    handles: list[matplotlib.artist.Artist] = [
        matplotlib.patches.Patch(color=colors[c], label=c.label) for c in columns
    ]
    handles.append(
        matplotlib.lines.Line2D([], [], linestyle="none", marker="_", markeredgewidth=2, color="crimson", label="paper")
    )
    _legend(axes[-1], handles)
    _save(figure, path)


def _legend(ax, handles: list) -> None:
    """A legend built from the configuration colours, not from one panel's artists (a panel may lack some)."""
    if handles:
        ax.legend(handles=handles, fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))


def plot_success_vs_size(
    evaluations: Sequence[Evaluation], path: pathlib.Path, split: str = "test-extrapolation"
) -> None:
    """Success rate (over seeds and problems) vs number of objects on `split`, one line per configuration."""
    chosen = [e for e in evaluations if e.split == split]
    domains = sorted({e.domain for e in evaluations}, key=lambda d: _order(PAPER_ORDER, d))
    columns = [c for c in _columns(evaluations) if any(c == e.column for e in chosen)]
    colors = _colors(evaluations)
    figure, axes = _panels(len(domains))
    for ax, domain in zip(axes, domains, strict=True):
        for column in columns:
            solved: dict[int, list[bool]] = {}
            for e in chosen:
                if (e.domain, e.column) == (domain, column):
                    for record in e.records:
                        solved.setdefault(int(record["num_objects"]), []).append(bool(record["solved"]))
            if solved:
                sizes = sorted(solved)
                ax.plot(
                    sizes,
                    [sum(solved[n]) / len(solved[n]) for n in sizes],
                    marker="o",
                    markersize=3,
                    color=colors[column],
                )
        ax.set_ylim(-0.03, 1.03)
        ax.set_title(f"{DOMAIN_TITLES.get(domain, domain)} ({SPLIT_TITLES.get(split, split)})")
        ax.set_xlabel("objects")
        ax.set_ylabel("success rate")
    _legend(
        axes[-1],
        [matplotlib.lines.Line2D([], [], marker="o", markersize=3, color=colors[c], label=c.label) for c in columns],
    )
    _save(figure, path)


def write_report(
    sweep_dir: str | os.PathLike,
    out_dir: str | os.PathLike | None = None,
    paper_csv: str | os.PathLike = PAPER_CSV,
    fd_plans_dir: str | os.PathLike | None = None,
) -> list[pathlib.Path]:
    """Write the tables and plots of a sweep (default into `<sweep_dir>/report`); returns the files written."""
    everything = collect(sweep_dir, beyond=True)
    evaluations = [e for e in everything if not e.ingredients]  # the paper's method: Table 1 and the rest
    paper = read_paper(paper_csv)
    out = pathlib.Path(out_dir) if out_dir is not None else pathlib.Path(sweep_dir) / "report"
    out.mkdir(parents=True, exist_ok=True)
    tables = (
        {
            "table1": success_table(evaluations, paper),
            "plan_quality": plan_quality(evaluations, fd_plans_dir),
            "failures": failure_table(evaluations),
        }
        if evaluations
        else {}
    )
    tables["beyond_paper"] = beyond_table(everything, paper)
    tables["beyond_quality"] = beyond_quality(everything, paper, fd_plans_dir)
    files = {f"{name}.{ext}": out / f"{name}.{ext}" for name in tables for ext in ("md", "csv")}
    for name, (md, table) in tables.items():
        write_text(files[f"{name}.md"], md)
        write_text(files[f"{name}.csv"], table)
    if evaluations:
        files.update({name: out / name for name in ("success_by_split.png", "success_vs_size.png")})
        plot_success_by_split(evaluations, paper, files["success_by_split.png"])
        plot_success_vs_size(evaluations, files["success_vs_size.png"])
    return list(files.values())
