"""The recurrent transition model: a 2-layer LSTM over concat(phi(s_t), phi(g)).

One module, `TransitionCell`, is a single time step (LSTM stack + head). Training
scans it over padded trajectories (`nn.scan`, one XLA loop); decoding calls the
same cell once per plan step with the carry passed in, so both use exactly the
same parameters. Training pads each split once and runs each epoch as one
compiled program, all seeds of a configuration together (`fit_seeds`); losses
average over real time steps only. Decoding pads its batches to powers of two so
XLA compiles only a handful of shapes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging as std_logging
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import orbax.checkpoint as ocp
import scipy.linalg  # noqa: F401  # loads the OpenBLAS that jaxlib's CPU QR calls, so `init_params` can limit it
import threadpoolctl
from flax.training import train_state
from tqdm import tqdm

from statecentric_jax.errors import InputError
from statecentric_jax.learning.transitions import sequences, to_state_space
from statecentric_jax.padding import next_power_of_two

if TYPE_CHECKING:
    from statecentric_jax.embedding.datasets import EmbeddedSplit

Carry = tuple[tuple[jax.Array, jax.Array], ...]  # per layer (c, h), each [B, hidden]
_COSINE_EPS = 1e-12  # as torch.nn.CosineEmbeddingLoss


class TransitionCell(nn.Module):
    """One step: stacked LSTM cells, then the head (state: Dense-LayerNorm-ReLU-Dense; delta: Dense)."""

    dim: int
    hidden: int
    layers: int
    mode: str

    @nn.compact
    def __call__(self, carry: Carry, inputs: jax.Array) -> tuple[Carry, jax.Array]:
        x = inputs
        new_carry = []
        for i, layer_carry in enumerate(carry):
            layer_carry, x = nn.OptimizedLSTMCell(self.hidden, name=f"lstm_{i}")(layer_carry, x)
            new_carry.append(layer_carry)
        if self.mode == "state":
            x = nn.relu(nn.LayerNorm(name="norm")(nn.Dense(self.hidden, name="hidden")(x)))
        return tuple(new_carry), nn.Dense(self.dim, name="out")(x)


# The cell scanned over axis 1 (time) with shared parameters: same parameter tree as the cell.
TransitionLSTM = nn.scan(
    TransitionCell, variable_broadcast="params", split_rngs={"params": False}, in_axes=1, out_axes=1
)


def zero_carry(batch_size: int, hidden: int, layers: int) -> Carry:
    zeros = jnp.zeros((batch_size, hidden), jnp.float32)
    return tuple((zeros, zeros) for _ in range(layers))


def step_losses(outputs: jax.Array, targets: jax.Array, mode: str) -> jax.Array:
    """Loss per time step [...]: cosine embedding loss (state mode) or MSE (delta mode)."""
    if mode == "state":
        dot = jnp.sum(outputs * targets, axis=-1)
        norms = (jnp.sum(outputs**2, axis=-1) + _COSINE_EPS) * (jnp.sum(targets**2, axis=-1) + _COSINE_EPS)
        return 1.0 - dot / jnp.sqrt(norms)
    return jnp.mean((outputs - targets) ** 2, axis=-1)


def masked_mean(losses: jax.Array, mask: jax.Array) -> jax.Array:
    return jnp.sum(losses * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def batch_loss(module: nn.Module, params: Any, inputs: jax.Array, targets: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean loss over the real steps of a padded batch, the sequences starting from a zero carry."""
    carry = zero_carry(inputs.shape[0], module.hidden, module.layers)
    _, outputs = module.apply({"params": params}, carry, inputs)
    return masked_mean(step_losses(cast(jax.Array, outputs), targets, module.mode), mask)


def pad_split(pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[jax.Array, ...]:
    """Stack (inputs [T_i, 2D], targets [T_i, D]) once into inputs [N+1, L, 2D], targets [N+1, L, D], mask [N+1, L],
    L the longest sequence; row N is all padding and fills the last batch. Padded steps have mask 0, so a
    batch's masked mean is that of its real steps, whatever the padding."""
    rows, length = len(pairs) + 1, max(len(x) for x, _ in pairs)
    inputs = np.zeros((rows, length, pairs[0][0].shape[1]), np.float32)
    targets = np.zeros((rows, length, pairs[0][1].shape[1]), np.float32)
    mask = np.zeros((rows, length), np.float32)
    for i, (x, y) in enumerate(pairs):
        inputs[i, : len(x)], targets[i, : len(y)], mask[i, : len(x)] = x, y, 1.0
    return jnp.asarray(inputs), jnp.asarray(targets), jnp.asarray(mask)


def batch_rows(order: np.ndarray, batch_size: int) -> np.ndarray:
    """A permutation of 0..N-1 as [batches, min(batch_size, N)] row indices, the last batch filled with row N
    (a split smaller than a batch is one batch of its own size, not padded up to `batch_size`)."""
    batch_size = min(batch_size, len(order))
    batches = -(-len(order) // batch_size)
    return np.pad(order, (0, batches * batch_size - len(order)), constant_values=len(order)).reshape(batches, -1)


@dataclasses.dataclass
class LSTMModel:
    """Trained parameters plus what is needed to run them one step at a time."""

    kind: ClassVar[str] = "lstm"
    params: Any
    dim: int
    hidden: int
    layers: int
    mode: str

    def __post_init__(self):
        cell = TransitionCell(self.dim, self.hidden, self.layers, self.mode)
        self._step = jax.jit(lambda params, carry, inputs: cell.apply({"params": params}, carry, inputs))

    def init_carry(self, batch_size: int) -> Carry:
        return zero_carry(batch_size, self.hidden, self.layers)

    def predict_next(self, states: np.ndarray, goals: np.ndarray, carry: Carry) -> tuple[np.ndarray, Carry]:
        """One LSTM step for a batch; rows are padded to a power of two to limit recompiles."""
        states = np.asarray(states, np.float32)
        n = len(states)
        pad = next_power_of_two(n) - n
        inputs = np.pad(np.concatenate([states, np.asarray(goals, np.float32)], axis=1), ((0, pad), (0, 0)))
        padded = jax.tree_util.tree_map(lambda x: jnp.pad(x, ((0, pad), (0, 0))), carry)
        new_carry, outputs = self._step(self.params, padded, inputs)
        new_carry = jax.tree_util.tree_map(lambda x: x[:n], new_carry)
        return to_state_space(states, np.asarray(outputs[:n]), self.mode), new_carry

    def size(self) -> dict[str, int]:
        return {"parameters": int(sum(x.size for x in jax.tree_util.tree_leaves(self.params)))}

    def save(self, directory: str | os.PathLike) -> None:
        """Orbax checkpoint of the parameters (orbax writes to a temporary folder, then renames)."""
        checkpointer = ocp.StandardCheckpointer()
        checkpointer.save(os.path.abspath(directory), self.params, force=True)
        checkpointer.wait_until_finished()


def init_params(dim: int, settings: ml_collections.ConfigDict, mode: str, seed: int) -> Any:
    """Fresh parameters from PRNGKey(seed) (the same tree the scanned model trains).

    The recurrent kernels' orthogonal initialisation is a QR decomposition, which jaxlib runs in SciPy's
    OpenBLAS; its rounding depends on OpenBLAS's thread count (OMP_NUM_THREADS, which `launch/sweep.py
    --parallel` lowers, or the number of cores). One BLAS thread makes the parameters, and so the trained
    model, the same however many cores the process has."""
    cell = TransitionCell(dim, settings.hidden, settings.layers, mode)
    carry = zero_carry(1, settings.hidden, settings.layers)
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        params = cell.init(jax.random.PRNGKey(seed), carry, jnp.zeros((1, 2 * dim), jnp.float32))["params"]
        return jax.block_until_ready(params)  # JAX dispatches asynchronously: the QR must run inside the limit


def _short(error: Exception) -> str:
    """The gist of an orbax/TensorStore error, without the JSON spec it embeds."""
    text = " ".join(str(error).split())
    text = text.split(" [source locations=")[0].split("{")[0].rstrip(" :;,")
    return f"{type(error).__name__}: {text[:120]}"


def _shapes(tree: Any) -> dict[str, tuple[int, ...]]:
    """Each array's shape by its path in the parameter tree (stored metadata or abstract arrays)."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {jax.tree_util.keystr(path): tuple(leaf.shape) for path, leaf in leaves}


class _StrayReads(std_logging.Filter):
    """Drops what the tensorstore reads left in flight by a failed restore report when they finish: their
    callbacks find orbax's event loop closed, and their futures' errors were never retrieved."""

    def filter(self, record: std_logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Future exception was never retrieved")

    def unraisable(self, hook: Any) -> Any:
        """`hook` (for `sys.unraisablehook`) without the reads' closed-loop errors."""
        if getattr(hook, "drops_stray_reads", False):
            return hook

        def quiet(unraisable: Any) -> None:
            error = unraisable.exc_value
            if not (isinstance(error, RuntimeError) and str(error) == "Event loop is closed"):
                hook(unraisable)

        quiet.drops_stray_reads = True  # type: ignore[attr-defined]
        return quiet


_STRAY_READS = _StrayReads()


@contextlib.contextmanager
def _without_stray_read_noise() -> Iterator[None]:
    """Restore with one error line and nothing after it. The reads a failed restore leaves behind finish
    whenever they do, so after a failure their reports stay dropped for the rest of the process; orbax's
    warnings about what it could not read are dropped while restoring (the error says it)."""
    hook = sys.unraisablehook
    asyncio_log = std_logging.getLogger("asyncio")
    logs = [asyncio_log, std_logging.getLogger("absl")]  # absl: orbax's own warnings
    levels = [log.level for log in logs]
    for log in logs:
        log.setLevel(std_logging.CRITICAL)
    sys.unraisablehook = _STRAY_READS.unraisable(hook)
    try:
        yield
    except BaseException:
        if _STRAY_READS not in asyncio_log.filters:
            asyncio_log.addFilter(_STRAY_READS)
        raise  # the hook without the reads' errors stays
    else:
        sys.unraisablehook = hook
    finally:
        for log, level in zip(logs, levels):
            log.setLevel(level)


def load(directory: str | os.PathLike, dim: int, mode: str, settings: ml_collections.ConfigDict) -> LSTMModel:
    """Restore a checkpoint onto this machine's default device (CPU or GPU)."""
    directory = os.path.abspath(directory)
    if not os.path.isdir(directory):
        raise InputError(directory, "LSTM checkpoint not found")
    sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    abstract = jax.tree_util.tree_map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding),
        jax.eval_shape(lambda: init_params(dim, settings, mode, 0)),
    )
    try:
        with _without_stray_read_noise(), ocp.StandardCheckpointer() as checkpointer:
            metadata = checkpointer.metadata(directory).item_metadata
            if metadata is None:
                raise InputError(directory, "corrupt LSTM checkpoint (its metadata cannot be read)")
            stored = _shapes(metadata.tree)
            expected = _shapes(abstract)
            if stored != expected:  # checked before restoring: a failed restore leaves reads in flight
                key = next(iter(sorted(k for k in {*stored, *expected} if stored.get(k) != expected.get(k))))
                raise InputError(
                    directory,
                    f"not a checkpoint of this model: {key} has shape {stored.get(key)}, expected {expected.get(key)}"
                    " (config lstm.hidden, lstm.layers or the encoder changed?)",
                )
            params = checkpointer.restore(directory, abstract)
    except InputError:
        raise
    except Exception as e:  # orbax/tensorstore raise many types for unreadable or mismatched data
        raise InputError(directory, f"corrupt LSTM checkpoint or not one of this model ({_short(e)})") from None
    return LSTMModel(params, dim, settings.hidden, settings.layers, mode)


def _row(i: int, x: jax.Array) -> jax.Array:
    return x[i]


def fit(
    train: EmbeddedSplit, validation: EmbeddedSplit, mode: str, settings: ml_collections.ConfigDict, seed: int
) -> tuple[LSTMModel, list[dict]]:
    """Adam on the masked loss; returns the parameters of the epoch with the lowest validation loss."""
    (result,) = fit_seeds(train, validation, mode, settings, [seed])
    return result


def fit_seeds(
    train: EmbeddedSplit,
    validation: EmbeddedSplit,
    mode: str,
    settings: ml_collections.ConfigDict,
    seeds: Sequence[int],
) -> list[tuple[LSTMModel, list[dict]]]:
    """Train one model per seed together (`jax.vmap` over parameters, optimizer state and batch orders).

    Each seed keeps today's random streams: parameters from PRNGKey(seed) and, per epoch, the batch order
    `np.random.default_rng(seed).permutation(N)`, drawn up front. One epoch is one jitted program (a
    `lax.scan` over the batches, then the validation loss and the best-so-far update), with the state
    buffers donated; losses stay on the device until the run ends.
    """
    train_pairs = sequences(train.trajectories, train.goals, mode)
    val_pairs = sequences(validation.trajectories, validation.goals, mode)
    dim = train_pairs[0][1].shape[1]
    module = TransitionLSTM(dim, settings.hidden, settings.layers, mode)
    optimizer = optax.adam(settings.learning_rate)
    train_data, val_data = pad_split(train_pairs), pad_split(val_pairs)
    val_rows = jnp.asarray(batch_rows(np.arange(len(val_pairs)), settings.batch_size))

    def summed_loss(params, data, rows):
        """(sum of step losses, real step count) over the batch `rows`; its mean is today's batch loss."""
        inputs, targets, mask = (a[rows] for a in data)
        carry = zero_carry(rows.shape[0], module.hidden, module.layers)
        _, outputs = module.apply({"params": params}, carry, inputs)
        return jnp.sum(step_losses(outputs, targets, mode) * mask), jnp.sum(mask)

    def train_step(state, rows, train_data):
        def mean_loss(params):
            total, count = summed_loss(params, train_data, rows)
            return total / jnp.maximum(count, 1.0), (total, count)

        (_, (total, count)), grads = jax.value_and_grad(mean_loss, has_aux=True)(state.params)
        return state.apply_gradients(grads=grads), (total, count)

    def validation_loss(params, val_data):
        totals, counts = jax.lax.map(lambda rows: summed_loss(params, val_data, rows), val_rows)
        return jnp.sum(totals) / jnp.sum(counts)

    def epoch(carry, rows, train_data, val_data):
        state, best_params, best_loss = carry
        state, (totals, counts) = jax.lax.scan(functools.partial(train_step, train_data=train_data), state, rows)
        val_loss = validation_loss(state.params, val_data)
        better = val_loss < best_loss
        best_params = jax.tree_util.tree_map(lambda new, old: jnp.where(better, new, old), state.params, best_params)
        return (state, best_params, jnp.minimum(val_loss, best_loss)), (jnp.sum(totals) / jnp.sum(counts), val_loss)

    # the data are arguments shared by all seeds (not constants baked into the program)
    run_epoch = jax.jit(jax.vmap(epoch, in_axes=(0, 0, None, None)), donate_argnums=0)

    states = [
        train_state.TrainState.create(apply_fn=module.apply, params=init_params(dim, settings, mode, s), tx=optimizer)
        for s in seeds
    ]
    state = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)
    carry = (state, jax.tree_util.tree_map(jnp.copy, state.params), jnp.full(len(seeds), jnp.inf, jnp.float32))
    rngs = [np.random.default_rng(s) for s in seeds]
    orders = [
        np.stack([batch_rows(rng.permutation(len(train_pairs)), settings.batch_size) for rng in rngs])
        for _ in range(settings.epochs)
    ]
    losses = []
    for rows in tqdm(orders, desc=f"lstm {mode} x{len(seeds)} seeds", unit="epoch", mininterval=2):
        carry, epoch_losses = run_epoch(carry, jnp.asarray(rows), train_data, val_data)
        losses.append(epoch_losses)
    train_losses, val_losses = (
        np.asarray(x, np.float64) for x in jax.device_get(jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *losses))
    )
    results = []
    for i in range(len(seeds)):
        history = [
            {"step": e + 1, "train_loss": float(train_losses[e, i]), "validation_loss": float(val_losses[e, i])}
            for e in range(settings.epochs)
        ]
        best = jax.tree_util.tree_map(functools.partial(_row, i), carry[1])
        results.append((LSTMModel(best, dim, settings.hidden, settings.layers, mode), history))
    return results
