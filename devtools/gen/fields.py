"""The catalogue of the simulated network tuple: 20 fields and the value set of each.

The reference tuples of [Mars] (docs/references.md) have 20 fields. `timestamp` comes first and
is computed from the record's position (see `devtools.gen.timestamps`); every other field draws
its value from a known, finite pool, uniformly or Zipf-skewed. Pools are built deterministically
from code, never from the random seed, so a value's pool rank means the same thing in every run.

IP addresses are spread over their address space with a multiplicative scramble (an odd
multiplier is a bijection modulo a power of two), so small pools still look like real traffic
while staying distinct.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TIMESTAMP_FIELD = "timestamp"
SIP_FIELD = "sip"

TYPES = ("http", "dns", "ssh", "smtp", "ftp", "icmp", "ntp", "tls")
PROTOCOLS = ("tcp", "udp", "icmp")
SERVICE_PORTS = (20, 21, 22, 25, 53, 80, 110, 123, 143, 443, 445, 993, 3306, 3389, 5432, 8080)
LOCATIONS = (
    "Beijing",
    "Shanghai",
    "Guangzhou",
    "Shenzhen",
    "Hangzhou",
    "Chengdu",
    "Wuhan",
    "Xian",
    "Nanjing",
    "Tianjin",
    "Chongqing",
    "Suzhou",
    "Harbin",
    "Qingdao",
    "Dalian",
    "Xiamen",
)
TCP_FLAGS = ("SYN", "SYN-ACK", "ACK", "PSH-ACK", "FIN-ACK", "FIN", "RST", "RST-ACK")
TTLS = (32, 64, 128, 255)
APPS = (
    "web",
    "wechat",
    "qq",
    "weibo",
    "taobao",
    "alipay",
    "douyin",
    "baidu",
    "mail",
    "game",
    "video",
    "p2p",
    "vpn",
    "cdn",
    "update",
    "other",
)
DIRECTIONS = ("inbound", "outbound", "internal")
STATUSES = ("ok", "denied", "reset", "timeout", "error")
ISPS = ("ChinaTelecom", "ChinaUnicom", "ChinaMobile", "CERNET", "Aliyun", "Tencent")

DIP_POOL_SIZE = 4096
DEVICE_POOL_SIZE = 2048
UID_POOL_SIZE = 100_000

PoolValue = str | int

FIELD_NAMES = (
    TIMESTAMP_FIELD,
    "type",
    SIP_FIELD,
    "dip",
    "sport",
    "dport",
    "proto",
    "location",
    "bytes",
    "packets",
    "duration",
    "flags",
    "ttl",
    "app",
    "device",
    "uid",
    "vlan",
    "direction",
    "status",
    "isp",
)
"""All 20 field names in record order (also the CSV column order)."""


@dataclass(frozen=True, slots=True)
class FieldPool:
    """One non-timestamp field: its JSON/CSV name and the ordered set of values it can take.

    With Zipf skew, a value's probability falls with its index in `values` (index 0 is the
    most frequent).
    """

    name: str
    values: Sequence[PoolValue]


def _scrambled_host(index: int, *, bits: int) -> int:
    """A distinct host number below 2**bits for each index below 2**bits."""
    return (index * 2_654_435_761) & ((1 << bits) - 1)  # odd multiplier: a bijection


def sip_values(cardinality: int) -> list[str]:
    """`cardinality` distinct source addresses in 10.0.0.0/8."""
    if not 1 <= cardinality <= 1 << 24:
        raise ValueError(f"sip cardinality must be in 1..{1 << 24}, got {cardinality}")
    hosts = (_scrambled_host(i, bits=24) for i in range(cardinality))
    return [f"10.{h >> 16}.{(h >> 8) & 0xFF}.{h & 0xFF}" for h in hosts]


def dip_values() -> list[str]:
    """Destination addresses in 172.16.0.0/12 style (172.<16..31>.x.y)."""
    hosts = (_scrambled_host(i, bits=20) for i in range(DIP_POOL_SIZE))
    return [f"172.{16 + (h >> 16)}.{(h >> 8) & 0xFF}.{h & 0xFF}" for h in hosts]


def field_pools(*, sip_cardinality: int) -> tuple[FieldPool, ...]:
    """The 19 non-timestamp fields, in record order (the reference query's fields first)."""
    return (
        FieldPool("type", TYPES),
        FieldPool(SIP_FIELD, sip_values(sip_cardinality)),
        FieldPool("dip", dip_values()),
        FieldPool("sport", range(1024, 65536)),
        FieldPool("dport", SERVICE_PORTS),
        FieldPool("proto", PROTOCOLS),
        FieldPool("location", LOCATIONS),
        FieldPool("bytes", range(40, 65536)),
        FieldPool("packets", range(1, 1024)),
        FieldPool("duration", range(0, 60_000)),  # milliseconds
        FieldPool("flags", TCP_FLAGS),
        FieldPool("ttl", TTLS),
        FieldPool("app", APPS),
        FieldPool("device", [f"dev-{i:04d}" for i in range(DEVICE_POOL_SIZE)]),
        FieldPool("uid", [f"user{i:06d}" for i in range(UID_POOL_SIZE)]),
        FieldPool("vlan", range(1, 4095)),
        FieldPool("direction", DIRECTIONS),
        FieldPool("status", STATUSES),
        FieldPool("isp", ISPS),
    )
