"""What the test suites share that is not a fixture: the one rule for a test that cannot run here.

A test whose tool, privilege or machine is missing is skipped, with the reason, wherever that is expected
(a laptop without QEMU, a container without root); where the environment says it must run (CI, or a
developer who asks for it), the same reason fails the test instead, so a suite that quietly ran nothing is
never reported as passing. The environment variables that ask for it are named by each caller:

- FAVORLAB_REQUIRE_GUEST=1: the QEMU guest must boot here (`./favorlab test` sets it under CI=true);
- FAVORLAB_REQUIRE_CONTAINERS=1: a container engine must run here (.ci/run sets it);
- CI=true: set by CI itself, for tools CI always installs (Go, Rscript).

A module at the repository root rather than a conftest.py, since conftest modules are not importable by
name from every test directory.
"""
from __future__ import annotations

import os
from typing import NoReturn

import pytest

GUEST = ("FAVORLAB_REQUIRE_GUEST",)
CONTAINERS = ("FAVORLAB_REQUIRE_CONTAINERS",)
CI = ("CI",)


def required(required_by=GUEST) -> str | None:
    """The first of the environment variables `required_by` that is set to 1 or true, or None."""
    for name in required_by:
        if os.environ.get(name, "").strip().lower() in ("1", "true"):
            return name
    return None


def unavailable(reason: str, required_by=GUEST) -> NoReturn:
    """Ends the calling test (or fixture): a failure naming `reason` when one of `required_by` asks for the
    test to run here, else a skip with `reason`."""
    by = required(required_by)
    if by:
        pytest.fail(f"{reason} (required here: {by}={os.environ[by]})")
    pytest.skip(reason)
