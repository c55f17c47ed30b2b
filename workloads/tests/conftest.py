"""The `impl` fixture: the client/server contract tests run against the Python and the Go implementation."""
import os

import pytest

from workloads.tests.flowtools import GO, PY, build_go


def _strict() -> bool:
    return os.environ.get("FAVORLAB_REQUIRE_GUEST") == "1" or os.environ.get("CI", "").lower() == "true"


@pytest.fixture(scope="session")
def go_built():
    """Builds workloads/go/bin/favorflow once per session; skips without `go` (fails in CI instead)."""
    why = build_go()
    if why:
        if _strict():
            pytest.fail(why + " (required: FAVORLAB_REQUIRE_GUEST=1 or CI=true)")
        pytest.skip(why)
    return GO


@pytest.fixture(params=["python", "go"])
def impl(request):
    """The implementation under test (flowtools.Impl: .client / .server command prefixes)."""
    if request.param == "go":
        return request.getfixturevalue("go_built")
    return PY
