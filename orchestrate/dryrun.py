"""A testbed API object seen through a dry run: every method call on it is printed and not made.

`./favorlab testbed ... --dry-run` walks the same code as the real command with the API client (fablib's
FablibManager, the CloudLab portal) replaced by Dry: each call prints as `dry run: would call fm.new_slice(
name='x')` and returns another Dry that stands for the result, so the calls made on that result print too
(`fm.new_slice(name='x').submit(lease_in_hours=30)`), and that prints as the call it stands for where a
value is shown (`<fm.get_slice(name='x').get_lease_end()>`). A call's arguments print as Python literals,
so the printed line is the call the real run makes.
"""
from __future__ import annotations

import sys


class Dry:
    def __init__(self, expr: str, out=None):
        self._expr = expr
        self._out = out or sys.stdout

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)

        def call(*args, **kwargs):
            text = f"{self._expr}.{attr}({', '.join([*map(repr, args), *(f'{k}={v!r}' for k, v in kwargs.items())])})"
            print(f"dry run: would call {text}", file=self._out, flush=True)
            return Dry(text, self._out)
        return call

    def __repr__(self) -> str:
        return f"<{self._expr}>"

    __str__ = __repr__


def is_dry(value) -> bool:
    """Whether a value is a dry run's stand-in (its content is not known until the real run)."""
    return isinstance(value, Dry)
