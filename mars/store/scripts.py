"""The protocol's Lua scripts, registered on one client so they run with EVALSHA."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files

from redis.commands.core import Script

from mars.clients.redis_connection import RedisClient


def lua_source(name: str) -> str:
    """The text of `lua/<name>.lua`: every script of the protocol lives there."""
    return files("mars.store").joinpath("lua", f"{name}.lua").read_text(encoding="utf-8")


@dataclass(frozen=True, slots=True)
class StoreScripts:
    """Script handles bound to one client (EVALSHA, falling back to EVAL on NOSCRIPT)."""

    apply_batch: Script
    snapshot: Script
    release: Script
    drop_checkpoints: Script
    change_layout: Script

    @classmethod
    def register(cls, client: RedisClient) -> StoreScripts:
        return cls(
            apply_batch=client.register_script(lua_source("apply_batch")),
            snapshot=client.register_script(lua_source("snapshot")),
            release=client.register_script(lua_source("release")),
            drop_checkpoints=client.register_script(lua_source("drop_checkpoints")),
            change_layout=client.register_script(lua_source("change_layout")),
        )
