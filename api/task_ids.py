"""Task ids: the accepted shape (it names Kafka topics, ZooKeeper nodes and Redis hash tags)
and the generated default."""

from __future__ import annotations

import re
import uuid

TASK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$"
_TASK_ID = re.compile(TASK_ID_PATTERN)
_NOT_SLUG = re.compile(r"[^a-z0-9_]+")
_SLUG_STEM_CHARS = 40


def is_task_id(text: str) -> bool:
    """True when `text` is a valid task id (the same rule `mars.sql.parse_task` enforces)."""
    return _TASK_ID.fullmatch(text) is not None


def generate_task_id(source_topic: str) -> str:
    """`<slug of the source topic>-<6 hex>`, e.g. `network_tuples-3f9a1c`."""
    stem = _NOT_SLUG.sub("-", source_topic.lower()).strip("-_")[:_SLUG_STEM_CHARS].strip("-_")
    suffix = uuid.uuid4().hex[:6]
    return f"{stem}-{suffix}" if stem else f"task-{suffix}"
