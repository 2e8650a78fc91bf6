"""Simulated input: [Mars]'s 20-field network tuples (docs/references.md), and their producer.

    from devtools.gen import GeneratorConfig, generate, iter_chunks
    batch = generate(GeneratorConfig(count=10_000, seed=7, malformed_ratio=0.01))
    batch.values        # list[bytes], one JSON object (or CSV line) per record
    batch.malformed     # frozenset of indices of the malformed records

`devtools.gen.produce.produce` writes such a stream to a Kafka topic.
"""

from devtools.gen.config import Encoding, GeneratorConfig
from devtools.gen.fields import FIELD_NAMES
from devtools.gen.malformed import MalformedKind
from devtools.gen.tuples import GeneratedBatch, generate, iter_chunks

__all__ = [
    "FIELD_NAMES",
    "Encoding",
    "GeneratedBatch",
    "GeneratorConfig",
    "MalformedKind",
    "generate",
    "iter_chunks",
]
