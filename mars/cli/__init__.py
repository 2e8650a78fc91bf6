"""The `mars` command."""
