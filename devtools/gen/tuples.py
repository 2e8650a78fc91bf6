"""The reference tuples (docs/references.md): `generate` a batch or `iter_chunks` of a stream.

Records are produced in fixed internal blocks, each with its own random stream seeded by
`(seed, block number)`, so the output depends only on the config: `generate(c)` equals the
concatenation of `iter_chunks(c, chunk_size=n)` for every `n`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from devtools.gen.binary_encoding import BINARY_ENCODINGS, BinaryEncoder, reference_schema
from devtools.gen.config import Encoding, GeneratorConfig
from devtools.gen.encoder import FragmentEncoder
from devtools.gen.fields import SIP_FIELD, FieldPool, field_pools
from devtools.gen.malformed import MALFORMED_KINDS, MalformedKind, corrupt
from devtools.gen.timestamps import encode_times, event_times_ms

BLOCK_SIZE = 65_536


@dataclass(frozen=True, slots=True, kw_only=True)
class GeneratedBatch:
    """Records `start_index .. start_index + len(values) - 1` of a generated stream.

    `keys[i]` is the `sip` drawn for `values[i]` (also for malformed records, which are
    derived from a valid tuple), for key-based partitioning. `malformed` holds stream-global
    indices; `malformed_kinds` says what is wrong with each.
    """

    start_index: int
    values: list[bytes]
    keys: list[bytes]
    malformed: frozenset[int] = frozenset()
    malformed_kinds: Mapping[int, MalformedKind] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.values)

    @property
    def end_index(self) -> int:
        return self.start_index + len(self.values)

    def slice(self, lo: int, hi: int) -> GeneratedBatch:
        """Records with stream-global indices in `[lo, hi)`, clipped to this batch."""
        lo, hi = max(lo, self.start_index), min(hi, self.end_index)
        kinds = {i: k for i, k in self.malformed_kinds.items() if lo <= i < hi}
        a, b = lo - self.start_index, hi - self.start_index
        return GeneratedBatch(
            start_index=lo,
            values=self.values[a:b],
            keys=self.keys[a:b],
            malformed=frozenset(kinds),
            malformed_kinds=kinds,
        )


def concat(batches: list[GeneratedBatch]) -> GeneratedBatch:
    """Consecutive batches as one."""
    if not batches:
        return GeneratedBatch(start_index=0, values=[], keys=[])
    kinds: dict[int, MalformedKind] = {}
    values: list[bytes] = []
    keys: list[bytes] = []
    for batch in batches:
        if batch.start_index != batches[0].start_index + len(values):
            raise ValueError("batches are not consecutive")
        values += batch.values
        keys += batch.keys
        kinds.update(batch.malformed_kinds)
    return GeneratedBatch(
        start_index=batches[0].start_index,
        values=values,
        keys=keys,
        malformed=frozenset(kinds),
        malformed_kinds=kinds,
    )


class _PoolSampler:
    """Draws pool indices for one field: uniform, or Zipf over the pool order."""

    def __init__(self, size: int, *, zipf_s: float) -> None:
        self._size = size
        self._cdf: npt.NDArray[np.float64] | None = None
        if zipf_s > 0:
            weights = np.arange(1, size + 1, dtype=np.float64) ** -zipf_s
            cdf = np.cumsum(weights)
            self._cdf = cdf / cdf[-1]

    def draw(self, rng: np.random.Generator, n: int) -> npt.NDArray[np.int64]:
        if self._cdf is None:
            return rng.integers(0, self._size, size=n, dtype=np.int64)
        picked = np.searchsorted(self._cdf, rng.random(n), side="right")
        return np.minimum(picked, self._size - 1).astype(np.int64)


class _BlockGenerator:
    """Everything derived from the config once; `block(b)` renders internal block b."""

    def __init__(self, config: GeneratorConfig) -> None:
        self.config = config
        pools: tuple[FieldPool, ...] = field_pools(sip_cardinality=config.sip_cardinality)
        self._samplers = [_PoolSampler(len(p.values), zipf_s=config.zipf_s) for p in pools]
        # Avro and Protobuf records are made from the JSON ones (devtools.gen.binary_encoding).
        self._text = Encoding.CSV if config.encoding is Encoding.CSV else Encoding.JSON
        self._encoder = FragmentEncoder(pools, encoding=self._text)
        self._binary = (
            BinaryEncoder(
                config.encoding,
                reference_schema(config.encoding, config.time_format),
                schema_id=config.schema_id,
            )
            if config.encoding in BINARY_ENCODINGS
            else None
        )
        self._sip_position = [p.name for p in pools].index(SIP_FIELD)
        sips = [str(v).encode("ascii") for v in pools[self._sip_position].values]
        self._sip_bytes = np.empty(len(sips), dtype=object)
        self._sip_bytes[:] = sips

    @property
    def blocks(self) -> int:
        return -(-self.config.count // BLOCK_SIZE)

    def block(self, number: int) -> GeneratedBatch:
        config = self.config
        first = number * BLOCK_SIZE
        n = min(BLOCK_SIZE, config.count - first)
        rng = np.random.default_rng([config.seed, number])
        indices = [sampler.draw(rng, n) for sampler in self._samplers]
        times = event_times_ms(config, first=first, n=n, rng=rng)
        encoded_times = encode_times(
            times, time_format=config.time_format, quote=self._text is Encoding.JSON
        )
        values = self._encoder.encode(encoded_times, indices)
        keys: list[bytes] = self._sip_bytes[indices[self._sip_position]].tolist()
        kinds = self._corrupt(values, rng=rng, first=first)
        if self._binary is not None:
            values = self._binary.encode(values, [index - first for index in kinds])
        return GeneratedBatch(
            start_index=first,
            values=values,
            keys=keys,
            malformed=frozenset(kinds),
            malformed_kinds=kinds,
        )

    def _corrupt(
        self, values: list[bytes], *, rng: np.random.Generator, first: int
    ) -> dict[int, MalformedKind]:
        """Replace round(ratio * n) random records of the block by malformed variants."""
        n = len(values)
        k = round(self.config.malformed_ratio * n)
        if k == 0:
            return {}
        positions = np.sort(rng.choice(n, size=k, replace=False))
        kind_numbers = rng.integers(0, len(MALFORMED_KINDS), size=k)
        draws = rng.random(k)
        kinds: dict[int, MalformedKind] = {}
        for pos, kind_number, draw in zip(
            positions.tolist(), kind_numbers.tolist(), draws.tolist(), strict=True
        ):
            kind = MALFORMED_KINDS[kind_number]
            values[pos] = corrupt(values[pos], kind=kind, encoding=self._text, draw=draw)
            kinds[first + pos] = kind
        return kinds


def iter_chunks(
    config: GeneratorConfig, *, chunk_size: int = BLOCK_SIZE
) -> Iterator[GeneratedBatch]:
    """The stream of `config.count` records in consecutive chunks of `chunk_size` (last shorter)."""
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be > 0, got {chunk_size}")
    generator = _BlockGenerator(config)
    pending: list[GeneratedBatch] = []
    pending_len = 0
    for number in range(generator.blocks):
        block = generator.block(number)
        pending.append(block)
        pending_len += len(block)
        if pending_len < chunk_size:
            continue
        merged = concat(pending)
        cut = merged.start_index
        while merged.end_index - cut >= chunk_size:
            yield merged.slice(cut, cut + chunk_size)
            cut += chunk_size
        rest = merged.slice(cut, merged.end_index)
        pending, pending_len = ([rest], len(rest)) if len(rest) else ([], 0)
    if pending_len:
        yield concat(pending)


def generate(config: GeneratorConfig) -> GeneratedBatch:
    """All `config.count` records at once (use `iter_chunks` for streams that do not fit)."""
    generator = _BlockGenerator(config)
    return concat([generator.block(number) for number in range(generator.blocks)])
