"""The `impl` fixture: the client/server contract tests run against the Python and the Go implementation."""
import pytest

from favorlab_testing import CI, GUEST, unavailable
from workloads.launch import GO, PY, build_go


@pytest.fixture(scope="session")
def go_built():
    """Builds workloads/go/bin/favorflow once per session; skips without `go` (fails in CI instead)."""
    why = build_go()
    if why:
        unavailable(why, required_by=GUEST + CI)
    return GO


@pytest.fixture(params=["python", "go"])
def impl(request):
    """The implementation under test (workloads.launch.Impl: .client / .server command prefixes)."""
    if request.param == "go":
        return request.getfixturevalue("go_built")
    return PY
