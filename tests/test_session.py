"""tests/session.py, what `./favorlab test` runs: its three parts are the whole suite, each test in exactly one,
and the host part's lowered share really leaves the CPU to others."""
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import session  # noqa: E402 (tests/ is no package)
from workloads.bench import proc_cpu  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _collected(part=None):
    env = {k: v for k, v in os.environ.items() if k != session.PART}
    if part:
        env[session.PART] = part
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"], cwd=REPO,
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return [line for line in p.stdout.splitlines() if "::" in line]


@pytest.mark.slow
def test_the_three_parts_hold_every_test_once_in_the_order_of_one_session():
    whole = _collected()
    parts = {part: _collected(part) for part in ("timing", "host", "guest")}
    assert all(parts.values()), {k: len(v) for k, v in parts.items()}
    assert parts["timing"] + parts["host"] + parts["guest"] == whole
    assert any("test_guest.py" in t for t in parts["guest"]) and not any("test_guest.py" in t for t in parts["host"])


def test_an_unknown_part_is_refused_with_the_parts_there_are():
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        "tests/test_house.py"], cwd=REPO, env=dict(os.environ, **{session.PART: "hots"}),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode != 0 and "FAVORLAB_TEST_PART='hots'" in p.stderr + p.stdout
    assert "timing, host, guest" in p.stderr + p.stdout


BUSY = "import time\nt = time.monotonic() + 30\nwhile time.monotonic() < t: pass\n"


def _cpu_seconds(procs):
    total = 0.0
    for proc in procs:
        try:
            total += sum(proc_cpu(proc.pid))
        except OSError:
            continue
    return total


def _busy_group(group, n):
    """A group's leader (a shell) and n busy loops it starts, as a part's pytest starts its tests' processes."""
    loops = " ".join([f"{sys.executable} -c '{BUSY}' &"] * n)
    leader = subprocess.Popen(["sh", "-c", f"{loops} wait"], preexec_fn=group.join)
    group.started(leader.pid)
    deadline = time.monotonic() + 10
    while len(session.tree(leader.pid)) < n + 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    return leader


@pytest.mark.timing
@pytest.mark.parametrize("kind", ["cgroup", "autogroup"])
def test_a_lowered_group_gets_almost_no_cpu_beside_busy_normal_ones_and_all_of_it_back(kind):
    """One busy loop per CPU at the normal share and as many in a lowered group: the lowered ones get a small
    fraction of what the normal ones get; restored, they get as much. (A timing test: it runs alone.)"""
    if kind == "cgroup" and not os.access(session.CGROUP_V1_CPU / "cgroup.procs", os.W_OK):
        pytest.skip("cgroup v1's cpu controller is not writable here (root on a cgroup v1 machine); "
                    "the autogroup case runs instead")
    ncpu = os.cpu_count() or 1
    normal, low = session.LowPriority(kind == "cgroup"), session.LowPriority(kind == "cgroup")
    leaders = []
    try:
        leaders = [_busy_group(normal, ncpu), _busy_group(low, ncpu)]
        pids = [session.tree(leader.pid) for leader in leaders]
        low.lower()

        def used(seconds):
            before = [_cpu_seconds(p) for p in pids]
            time.sleep(seconds)
            return [_cpu_seconds(p) - x for p, x in zip(pids, before)]
        got_normal, got_low = used(3)
        assert got_low < 0.1 * got_normal, (got_normal, got_low)
        low.restore()
        got_normal, got_low = used(3)
        assert got_low > 0.5 * got_normal, (got_normal, got_low)
    finally:
        for leader in leaders:
            for proc in session.tree(leader.pid)[::-1]:
                try:
                    proc.kill()
                except psutil.NoSuchProcess:
                    pass
            leader.wait()
        normal.close()
        low.close()


def test_the_group_names_itself_to_the_containers_its_tests_start_and_close_removes_what_engines_made_in_it(
        monkeypatch):
    """The host part's containers go in its lowered group (FAVORLAB_CGROUP_PARENT, the group as its processes see
    it in /proc/self/cgroup); the groups an engine makes inside it (buildkit/<id>, conmon) go with the group."""
    if not os.access(session.CGROUP_V1_CPU / "cgroup.procs", os.W_OK):
        pytest.skip("cgroup v1's cpu controller is not writable here (root on a cgroup v1 machine): the host part's "
                    "containers are not in its group there (tests/session.py)")
    from test_containers import cb      # containers/build, loaded as tests/test_containers.py loads it
    group = session.LowPriority()
    sleeper = None
    try:
        env = group.env()
        parent = env[session.CGROUP_PARENT]
        seen = subprocess.run(["cat", "/proc/self/cgroup"], preexec_fn=group.join, capture_output=True, text=True,
                              check=True).stdout
        assert any(l.split(":")[1].split(",").count("cpu") and l.split(":", 2)[2] == parent
                   for l in seen.splitlines()), (parent, seen)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        assert cb.cgroup_parent_args() == ["--cgroup-parent", parent]
        made = group.cgroup / "buildkit" / "step1"
        made.mkdir(parents=True)
        sleeper = subprocess.Popen(["sleep", "30"])
        (made / "cgroup.procs").write_text(str(sleeper.pid))
        # Podman given a parent makes it in every hierarchy (pids/<group>/conmon, memory/<group>/libpod-<id>)
        namesake = session.CGROUP_V1_CPU.parent / "pids" / parent.lstrip("/") / "conmon"
        if os.access(namesake.parents[1], os.W_OK):
            namesake.mkdir(parents=True)
        group.close()
        assert not group.cgroup.exists() and not namesake.parent.exists()
    finally:
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()
        if group.cgroup.exists():
            group.close()
