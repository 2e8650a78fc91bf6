"""`mars <command>` builds the parser of its command's module alone (cli/main.py): each module
of `COMMAND_MODULES` adds exactly the command it is listed under."""

from __future__ import annotations

import argparse

import pytest

from cli.main import COMMAND_MODULES, build_parser, entry_point_names


def commands_of(parser: argparse.ArgumentParser) -> set[str]:
    assert parser._subparsers is not None
    (action,) = [
        a for a in parser._subparsers._group_actions if isinstance(a, argparse._SubParsersAction)
    ]
    return set(action.choices)


@pytest.mark.parametrize("command", sorted(COMMAND_MODULES))
def test_a_command_alone_has_its_own_parser(command: str) -> None:
    assert commands_of(build_parser(command)) == {command}


def test_no_command_or_an_unknown_one_has_them_all() -> None:
    assert commands_of(build_parser()) == set(COMMAND_MODULES) == entry_point_names()
    assert commands_of(build_parser("--help")) == set(COMMAND_MODULES)
