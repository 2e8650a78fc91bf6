""".proto source -> Protobuf message classes, compiled by protoc (bundled by grpcio-tools).

A schema registry stores Protobuf schemas as .proto source, so the mapper compiles each writer
schema it meets into a descriptor set (`protoc --descriptor_set_out`, with the well-known types
on the include path) and builds its messages in a descriptor pool of their own: two versions of
one schema define the same names differently. A registered schema that imports others (schema
references) is compiled with their texts written under their import names beside it; a schema
file's imports are found in the file's own directory.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path, PurePosixPath

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.message import Message

from mars.formats.errors import SchemaProblem

_FILE_NAME = "schema.proto"
_PROTOC_TIMEOUT_S = 60.0


@lru_cache(maxsize=256)
def compile_proto(text: str, imports: tuple[tuple[str, str], ...] = ()) -> FileDescriptor:
    """The file descriptor of .proto `text`, which may import the (import name, text) pairs of
    `imports`; `SchemaProblem` with protoc's message when it does not compile."""
    name = _FILE_NAME
    while name in dict(imports):  # the main file's name must not shadow an import
        name = f"_{name}"
    with tempfile.TemporaryDirectory() as directory:
        for imported, imported_text in ((name, text), *imports):
            relative = PurePosixPath(imported)  # an import path: kept inside the directory
            if not imported or relative.is_absolute() or ".." in relative.parts:
                raise SchemaProblem(f"a schema reference named {imported!r} is not a relative path")
            path = Path(directory, relative)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(imported_text, encoding="utf-8")
        return _protoc(name, include=Path(directory))


def compile_proto_file(path: str) -> FileDescriptor:
    """The file descriptor of the .proto file at `path`, its imports read from its directory.
    Not cached: unlike a registered schema, the files may change while the process runs."""
    file = Path(path).absolute()
    return _protoc(file.name, include=file.parent)


def _protoc(name: str, *, include: Path) -> FileDescriptor:
    """Compiles file `name` of directory `include` (its imports found there, then among the
    well-known types) into a descriptor pool of its own."""
    import grpc_tools  # the package's own .proto files: the well-known types

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as directory:
        output = Path(directory) / "schema.desc"
        command = [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{include}",
            f"-I{well_known}",
            f"--descriptor_set_out={output}",
            "--include_imports",
            name,
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
    return pool.FindFileByName(name)


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
