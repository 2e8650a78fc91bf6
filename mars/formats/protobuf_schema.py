""".proto source -> Protobuf message classes, compiled by protoc (bundled by grpcio-tools).

A schema registry stores Protobuf schemas as .proto source, so the mapper compiles each writer
schema it meets into a descriptor set (`protoc --descriptor_set_out`, with the well-known types
on the include path) and builds its messages in a descriptor pool of their own: two versions of
one schema define the same names differently. Imports of other registered schemas (schema
references) are not supported.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.message import Message

from mars.formats.errors import SchemaProblem

_FILE_NAME = "schema.proto"
_PROTOC_TIMEOUT_S = 60.0


@lru_cache(maxsize=256)
def compile_proto(text: str) -> FileDescriptor:
    """The file descriptor of .proto `text`; `SchemaProblem` with protoc's message when it does
    not compile."""
    import grpc_tools  # the package's own .proto files: the well-known types

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as directory:
        source = Path(directory) / _FILE_NAME
        source.write_text(text, encoding="utf-8")
        output = Path(directory) / "schema.desc"
        command = [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{directory}",
            f"-I{well_known}",
            f"--descriptor_set_out={output}",
            "--include_imports",
            _FILE_NAME,
        ]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_PROTOC_TIMEOUT_S, check=False
        )
        if done.returncode != 0:
            raise SchemaProblem(f"the .proto schema does not compile: {done.stderr.strip()[:300]}")
        files = descriptor_pb2.FileDescriptorSet.FromString(output.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:  # imports first: protoc writes them in dependency order
        pool.Add(file)
    return pool.FindFileByName(_FILE_NAME)


def message_at(file: FileDescriptor, indexes: tuple[int, ...]) -> Descriptor:
    """The message a Confluent message-index array names: top-level message `indexes[0]`, then
    nested message `indexes[1]` of it, and so on."""
    messages = list(file.message_types_by_name.values())
    found: Descriptor | None = None
    for depth, index in enumerate(indexes):
        if index >= len(messages):
            raise SchemaProblem(
                f"message index {list(indexes)} names no message (level {depth} has "
                f"{len(messages)})"
            )
        found = messages[index]
        messages = list(found.nested_types)
    if found is None:
        raise SchemaProblem("empty Protobuf message-index array")
    return found


def message_named(file: FileDescriptor, name: str | None) -> Descriptor:
    """The message of that (full or package-relative) name; the file's first when None."""
    if name is None:
        return message_at(file, (0,))
    full = f"{file.package}.{name}" if file.package and not name.startswith(file.package) else name
    try:
        return file.pool.FindMessageTypeByName(full)
    except KeyError:
        known = ", ".join(file.message_types_by_name)
        raise SchemaProblem(f"no message '{name}' in the .proto schema (it has {known})") from None


def message_class(descriptor: Descriptor) -> type[Message]:
    message_type: type[Message] = message_factory.GetMessageClass(descriptor)
    return message_type
