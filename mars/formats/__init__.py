"""Avro and Protobuf input: the Confluent wire format, writer schemas from a schema registry
(cached per id) or from a schema file, and the record decoders that pick a task's fields out of
the decoded records (docs/semantics.md, "Input formats")."""
