"""The `eqsat` command's argument types: each checks its value while the command line is parsed,
before any work starts, and turns a bad one into argparse's one-line error."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Callable, NoReturn

import ir
import strategies
from strategies.devices import require_device

from .atomic import OutputFileError, output_target
from .errors import RuleError
from .extract import get_extractor
from .rules.library import RuleSet, resolve_rules

__all__ = ["Parser", "int_at_least", "seconds", "model_name", "target_kind", "extractor_name", "rule_sets", "comma_list",
           "existing_file", "output_file"]


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer >= `minimum`."""
    def integer(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {value}")
        return value
    return integer


def seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive finite number of seconds, got {text!r}")
    return value


def model_name(text: str) -> str:
    """An argparse type: a zoo model name or an existing file."""
    if text in ir.models.MODELS:
        return text
    path = Path(text)
    if path.is_file():
        return text
    if path.exists():
        raise argparse.ArgumentTypeError(f"{text!r} is not a file")
    if text.endswith(".onnx") or len(path.parts) > 1:
        raise argparse.ArgumentTypeError(f"no such file {text!r}")
    raise argparse.ArgumentTypeError(f"unknown model {text!r}; give a zoo model ({', '.join(ir.models.MODELS)}) "
                                     "or an .onnx file")


def target_kind(ops: bool = True, device: bool = False) -> Callable[[str], str]:
    """An argparse type: a known target's kind (aliases resolved), or 'ops' when `ops`; with `device`,
    one whose device this machine has."""
    def target(text: str) -> str:
        if ops and text == "ops":
            return text
        try:
            known = strategies.Target(text)
            if device:
                require_device(known)
        except strategies.TargetError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
        return known.kind
    return target


def extractor_name(text: str) -> str:
    """An argparse type: a registered extractor's name."""
    try:
        get_extractor(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def rule_sets(text: str) -> RuleSet:
    """An argparse type: library rule sets joined by '+'."""
    try:
        return resolve_rules(text)
    except RuleError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def comma_list(item: Callable[[str], str]) -> Callable[[str], list[str]]:
    """An argparse type: comma-separated items, each checked by `item`."""
    def items(text: str) -> list[str]:
        return [item(part.strip()) for part in text.split(",")]
    return items


def existing_file(text: str) -> str:
    """An argparse type: a file that exists."""
    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"no such file {text!r}")
    return text


def output_file(text: str) -> str:
    """An argparse type: a regular file path (or a link to one) whose directory exists (the file may not)."""
    try:
        path = output_target(text)
    except OutputFileError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"directory {str(path.parent)!r} of {text!r} does not exist")
    return text


class _Formatter(argparse.HelpFormatter):
    """Help that ends each option's text with its default ("none" when unset); flags are off by default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.option_strings and action.nargs != 0 and "(default" not in text:
            text += " (default: none)" if action.default is None else " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (exit status 2)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, formatter_class=_Formatter, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
