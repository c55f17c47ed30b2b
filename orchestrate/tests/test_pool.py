"""A pool of testbeds: the config's testbed section expanded into members, the default
number of local guests, leases (machine-wide file locks), members left out after they died, orchestrate.run_step on
a testbed that dies, up-all, and the pipeline's plan. No guest and no network: the testbed side is
faked; orchestrate/tests/test_pool_guest.py runs the same on two real guests."""
import json
import os
import shlex
import signal
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from orchestrate import run_step, runspec, testbeds
from orchestrate.config import ConfigError, validate
from orchestrate import pool

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """Leases and known_hosts files of these tests live in a cache of their own."""
    c = tmp_path / "cache"
    monkeypatch.setenv("FAVORLAB_CACHE", str(c))
    return c


def smoke(**testbed):
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    if testbed:
        cfg["testbed"] = testbed
    return cfg


@pytest.fixture
def inventory(tmp_path):
    inv = tmp_path / "inv" / "hosts.yml"
    inv.parent.mkdir()
    inv.write_text(yaml.safe_dump({"all": {"children": {
        "ssh_hosts": {"hosts": {"node0": {"ansible_host": "192.0.2.10"}, "node1": {"ansible_host": "192.0.2.11"}},
                      "children": {"rack2": {"hosts": {"node2": {"ansible_host": "192.0.2.12"}}}}},
        "spare": {"hosts": {"lone": {"ansible_host": "192.0.2.20"}}}}}}))
    return inv


def need_ansible_inventory():
    if not (Path(sys.executable).parent / "ansible-inventory").exists():
        pytest.skip("ansible-inventory is not in this venv (pip install -r requirements.txt)")


# ---------------------------------------------------------------- the config: pool expansion

def test_local_guests_named_from_the_first(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    cfg = validate(smoke(kind="local-vm", vm_name="favorlab", count=3))
    assert [m["vm_name"] for m in cfg["pool"]["members"]] == ["favorlab", "favorlab-2", "favorlab-3"]
    assert [m["id"] for m in cfg["pool"]["members"]] == ["favorlab", "favorlab-2", "favorlab-3"]
    assert cfg["pool"]["size"] == 3 and cfg["pool"]["retries"] == 2          # the schema's default
    assert all(m["kind"] == "local-vm" and m["keep_running"] is False for m in cfg["pool"]["members"])
    # a pool of one is the guest named vm_name itself, with no suffix
    one = validate(smoke(kind="local-vm", count=1))["pool"]["members"]
    assert [m["vm_name"] for m in one] == ["favorlab"]


@pytest.mark.parametrize("cpus, guests", [(1, 1), (2, 1), (3, 1), (4, 2), (5, 2), (16, 8), (None, 1)])
def test_default_count_one_guest_per_two_cores(monkeypatch, cpus, guests):
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    assert pool.default_vm_count() == guests
    cfg = validate(smoke(kind="local-vm", vm_name="favorlab-smoke"))
    assert cfg["pool"]["size"] == guests


def test_count_above_the_rule_is_allowed_with_a_warning(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    said = []
    cfg = validate(smoke(kind="local-vm", count=2), "my.yaml", warn=said.append)
    assert cfg["pool"]["size"] == 2
    assert len(said) == 1 and "my.yaml" in said[0] and "share CPU" in said[0] and "fidelity checks" in said[0]
    said.clear()
    validate(smoke(kind="local-vm", count=1), "my.yaml", warn=said.append)
    assert said == []


def test_ssh_pool_from_a_group_hosts_or_host(inventory):
    need_ansible_inventory()
    group = validate(smoke(kind="ssh", inventory=str(inventory), group="ssh_hosts"))["pool"]
    assert [m["host"] for m in group["members"]] == ["node0", "node1", "node2"]     # child groups too
    ids = [m["id"] for m in group["members"]]
    assert len(set(ids)) == 3 and all(i.startswith(h + "@") for i, h in zip(ids, ["node0", "node1", "node2"]))
    assert all(m["inventory"] == str(inventory) and m["kind"] == "ssh" for m in group["members"])
    hosts = validate(smoke(kind="ssh", inventory=str(inventory), hosts=["node1", "lone"]))["pool"]
    assert [m["host"] for m in hosts["members"]] == ["node1", "lone"]
    one = validate(smoke(kind="ssh", inventory=str(inventory), host="node0"))["pool"]
    assert one["size"] == 1 and one["members"][0]["id"] == ids[0]


def test_ssh_member_ids_follow_the_inventory(tmp_path):
    """node0 of two inventories (two CloudLab experiments) is two testbeds, with two known_hosts files."""
    a, b = tmp_path / "a.yml", tmp_path / "b.yml"
    assert pool.ssh_member_id("node0", a) != pool.ssh_member_id("node0", b)
    assert pool.ssh_member_id("node0", a) == pool.ssh_member_id("node0", tmp_path / "." / "a.yml")
    assert pool.known_hosts_file(pool.ssh_member_id("node0", a)).parent == pool.cache_root() / "known_hosts"


@pytest.mark.parametrize("testbed, words", [
    (dict(kind="local-vm", hosts=["node0"]), ["testbed.hosts is for kind 'ssh'", "Fix: remove testbed.hosts"]),
    (dict(kind="ssh", inventory="INV", count=2), ["testbed.count is for kind 'local-vm'", "testbed.hosts: [node0, node1]"]),
    (dict(kind="ssh", inventory="INV"), ["needs 'host' (one host), 'hosts' (a list) or 'group'"]),
    (dict(kind="ssh", inventory="INV", host="node0", group="ssh_hosts"), ["host and group", "keep one of"]),
    (dict(kind="ssh", host="node0"), ["kind 'ssh' needs 'inventory'"]),
    (dict(kind="ssh", inventory="/nonexistent/hosts.yml", host="node0"), ["does not exist"]),
    (dict(kind="ssh", inventory="INV", group="racks"), ["'racks' is not a group", "ssh_hosts", "spare"]),
    (dict(kind="ssh", inventory="INV", hosts=["node0", "node9"]), ["node9 not in", "lone", "node2"]),
    (dict(kind="local-vm", count=0), ["testbed.count", "Fix:"]),
    (dict(kind="local-vm", retries=-1), ["testbed.retries"]),
    (dict(kind="local-vm", cout=2), ["unknown key 'cout'", "count"]),
])
def test_bad_pool_names_the_fix(inventory, testbed, words):
    if testbed.get("inventory") == "INV":
        need_ansible_inventory()
        testbed["inventory"] = str(inventory)
    with pytest.raises(ConfigError) as e:
        validate(smoke(**testbed), "my.yaml")
    msg = str(e.value)
    assert "my.yaml" in msg and ("Fix" in msg), msg
    for w in words:
        assert w in msg, msg


def test_the_run_rules_testbed_parameter_is_the_kind_alone(monkeypatch):
    """Snakemake redoes a run whose params changed: sizing the pool or naming its guests must not touch the
    parameter (tests/test_reruns.py shows it with Snakemake)."""
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    before = {"kind": "local-vm"}
    assert runspec.testbed_param(validate(smoke())) == before
    grown = smoke()
    grown["testbed"].update(count=3, retries=1, vm_name="other", keep_running=True)
    assert runspec.testbed_param(validate(grown)) == before


def test_pool_size_cli(tmp_path):
    cfg = smoke(kind="local-vm", vm_name="favorlab-smoke", count=2)
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(cfg))
    r = subprocess.run([sys.executable, "-m", "orchestrate.config", "pool-size", str(p)], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == "2\n", r.stderr
    assert "warning" not in r.stderr                 # Snakemake says it, once
    cfg["testbed"]["count"] = 0
    p.write_text(yaml.safe_dump(cfg))
    r = subprocess.run([sys.executable, "-m", "orchestrate.config", "pool-size", str(p)], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "testbed.count" in r.stderr and r.stdout == ""


# ---------------------------------------------------------------- leases

def members(n, base="tb"):
    return [{"id": name, "kind": "local-vm", "vm_name": name} for name in pool.vm_names(base, n)]


def test_two_threads_get_different_members_and_a_third_waits():
    two = members(2)
    got, lock = {}, threading.Lock()

    def take(who):
        lease = pool.lease(two, None, what=who, poll_s=0.05, log=lambda m: got.setdefault(f"{who} said", m))
        with lock:
            got[who] = lease

    t1, t2 = threading.Thread(target=take, args=("a",)), threading.Thread(target=take, args=("b",))
    t1.start(), t2.start()
    t1.join(5), t2.join(5)
    assert {got["a"].id, got["b"].id} == {"tb", "tb-2"}
    t3 = threading.Thread(target=take, args=("c",))
    t3.start()
    time.sleep(0.5)
    assert t3.is_alive() and "c" not in got                       # both leased: it waits...
    assert "all 2 testbed(s) of the pool are leased" in got["c said"] and "pid" in got["c said"]
    got["b"].release()
    t3.join(5)
    assert got["c"].id == got["b"].id                            # ...and gets the one released
    assert got["b"].released_utc and got["c"].released_utc is None
    got["a"].release(), got["c"].release()


def test_a_lease_holds_across_processes_and_dies_with_its_holder(cache):
    """Machine-wide: another process (another pipeline) holding a guest keeps it from us; a holder
    killed without releasing frees it (the kernel drops the flock)."""
    code = ("import sys; from orchestrate import pool; l = pool.try_lease({'id': 'tb', 'kind': 'local-vm', "
            "'vm_name': 'tb'}, 'other pipeline'); print('held' if l else 'busy', flush=True); sys.stdin.read()")
    p = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, env=dict(os.environ, FAVORLAB_CACHE=str(cache)))
    try:
        assert p.stdout.readline().strip() == "held"
        assert pool.try_lease(members(1)[0]) is None
        assert "other pipeline" in pool.holder("tb")
        lease = pool.lease(members(2), None, poll_s=0.05)        # the pool's other member
        assert lease.id == "tb-2"
        lease.release()
    finally:
        p.kill()
        p.wait()
    again = pool.try_lease(members(1)[0])
    assert again is not None
    again.release()


def test_excluded_members_are_skipped_and_none_left_is_an_error(tmp_path):
    excl = tmp_path / "excluded"
    pool.exclude(excl, "tb", "VM tb is not running (its QEMU process, pid 4242, is gone)")
    lease = pool.lease(members(2), excl, poll_s=0.05)
    assert lease.id == "tb-2"
    lease.release()
    pool.exclude(excl, "tb-2", "does not answer SSH at 127.0.0.1:40002")
    with pytest.raises(pool.NoTestbedLeft) as e:
        pool.lease(members(2), excl, poll_s=0.05)
    msg = str(e.value)
    assert "no testbed left" in msg and "Fix:" in msg
    assert "tb: VM tb is not running" in msg and "tb-2: does not answer SSH" in msg
    rec = json.loads((excl / "tb").read_text())
    assert rec["member"] == "tb" and rec["reason"].startswith("VM tb") and rec["excluded_utc"].startswith("20")


# ---------------------------------------------------------------- the run step on a pool

SPEC = {"run_id": "dumbbell-10M_favor_load0.75_iw2_rep0", "fidelity": {"rate_min_share": 0.9}}

FAKE_REMOTE = """
import json, sys
from pathlib import Path
how, dest = sys.argv[1], Path(sys.argv[2])
if how == "dies":
    print("remote: root@127.0.0.1 stopped answering SSH (ssh exit 255)", file=sys.stderr)
    sys.exit(255)
if how == "fails":
    print("remote: the runner on root@127.0.0.1 exited with 1", file=sys.stderr)
    sys.exit(1)
if how == "interrupted":   # Ctrl-C while the attempt runs: SIGINT to the controller (our parent)
    import os, signal, time
    os.kill(os.getppid(), signal.SIGINT)
    time.sleep(30)
    sys.exit("the controller was not interrupted")
dest.mkdir(parents=True)
(dest / "fidelity.json").write_text(json.dumps({"valid": how == "valid", "reasons": [] if how == "valid" else ["cpu_busy"]}))
(dest / "DONE").write_text("")
"""


@pytest.fixture
def fake_pool(tmp_path, monkeypatch):
    """orchestrate.run_step with the testbed side faked: up() and target() do nothing real, and orchestrate.remote is a
    script that completes the attempt (valid or not), fails it, or exits 255 as a dead host does."""
    script = tmp_path / "fake_remote.py"
    script.write_text(FAKE_REMOTE)
    behaviour = {"how": "valid", "dead": None, "ups": []}
    monkeypatch.setattr(testbeds, "up", lambda m, out=None: behaviour["ups"].append(m["id"]) or {
        "host": "127.0.0.1", "port": 40000 + len(m["id"]), "user": "root", "known_hosts": "/kh", "host_key_checking": "yes"})
    monkeypatch.setattr(testbeds, "dead_reason", lambda m: behaviour["dead"])
    behaviour["then"] = []    # how the attempts go, one by one, before `how` takes over

    def how():
        return behaviour["then"].pop(0) if behaviour["then"] else behaviour["how"]
    monkeypatch.setattr(run_step, "remote_command",
                        lambda t, spec_file, schedule, dest: [sys.executable, str(script), how(), str(dest)])
    results = tmp_path / "results" / "cfg"
    (results / "specs").mkdir(parents=True)
    spec = results / "specs" / "run.json"
    spec.write_text(json.dumps(SPEC))
    sched = results / "schedule.csv"
    sched.write_text("flow_id,start_s\n")

    def main(members_, attempts=1):
        return run_step.main(["--testbed", json.dumps(members_), "--spec", str(spec), "--schedule", str(sched),
                             "--run-dir", str(results / "runs" / SPEC["run_id"]), "--attempts", str(attempts)])
    behaviour["main"], behaviour["results"] = main, results
    return behaviour


def test_dead_testbed_is_left_out_and_the_retry_leases_another(fake_pool, capsys):
    results, run_dir = fake_pool["results"], fake_pool["results"] / "runs" / SPEC["run_id"]
    staging = results / "attempts" / SPEC["run_id"]
    # attempt 1 came back invalid (an earlier job); attempt 2 goes to a testbed that dies (orchestrate.remote
    # exits 255, as it does when the host stopped answering)
    (staging / "1").mkdir(parents=True)
    (staging / "1" / "fidelity.json").write_text(json.dumps({"valid": False, "reasons": ["cpu_busy"]}))
    (staging / "1" / "DONE").write_text("")
    fake_pool["how"] = "dies"
    rc = fake_pool["main"](members(2), attempts=3)
    out = capsys.readouterr().out
    assert rc == run_step.EXIT_TESTBED_LEFT_OUT != 0
    assert ("testbed tb left out for the rest of this pipeline: stopped answering SSH during the attempt "
            "(orchestrate.remote exit 255)") in out
    rec = json.loads((results / "testbeds" / "excluded" / "tb").read_text())
    assert "exit 255" in rec["reason"] and SPEC["run_id"] in rec["reason"] and rec["excluded_utc"]
    assert not run_dir.exists() and run_step.finished_attempts(staging) == [1]     # the finished attempt kept
    lease = pool.try_lease(members(1)[0])                                         # released
    assert lease is not None
    lease.release()
    # Snakemake's retry: the same job again leases the other member and finishes from attempt 2
    fake_pool["how"] = "valid"
    assert fake_pool["main"](members(2), attempts=3) == 0
    tries = json.loads((run_dir / "attempts.json").read_text())
    assert [t["attempt"] for t in tries] == [1, 2] and tries[-1]["lease"]["member"] == "tb-2"
    assert fake_pool["ups"][-1] == "tb-2"
    # what both jobs said is kept beside the run, though Snakemake starts the rule's log afresh per try
    said = (run_dir / "controller.log").read_text()
    assert said.index("testbed tb left out for the rest of this pipeline: stopped answering SSH") \
        < said.index("leased testbed tb-2") < said.index("valid after 2 attempt(s)")
    assert said.count("job started") == 2 and not staging.exists()
    # the pool's last member dies too: nothing is left, and the message says what was left out and why
    pool.exclude(results / "testbeds" / "excluded", "tb-2", "VM tb-2 is not running (its QEMU process is gone)")
    shutil.rmtree(run_dir)
    assert fake_pool["main"](members(2)) == 1
    out = capsys.readouterr().out
    assert "no testbed left" in out and "tb: stopped answering SSH" in out and "tb-2: VM tb-2 is not running" in out


def test_vm_process_gone_is_a_dead_testbed_even_without_exit_255(fake_pool, capsys):
    fake_pool["how"], fake_pool["dead"] = "fails", "VM tb is not running (its QEMU process, pid 77, is gone)"
    assert fake_pool["main"](members(2)) == run_step.EXIT_TESTBED_LEFT_OUT
    assert "testbed tb left out for the rest of this pipeline: VM tb is not running" in capsys.readouterr().out
    assert (fake_pool["results"] / "testbeds" / "excluded" / "tb").is_file()


def test_a_failed_run_on_a_testbed_that_answers_is_not_left_out(fake_pool, capsys):
    fake_pool["how"] = "fails"
    assert fake_pool["main"](members(2)) == 1
    assert "failed on tb, which still answers" in capsys.readouterr().out
    assert not (fake_pool["results"] / "testbeds" / "excluded").exists()


def test_an_invalid_but_complete_attempt_keeps_the_testbed_and_records_the_lease(fake_pool):
    fake_pool["how"] = "invalid"
    t0 = time.strftime("%Y-%m-%d")
    assert fake_pool["main"](members(2), attempts=2) == 0
    run_dir = fake_pool["results"] / "runs" / SPEC["run_id"]
    assert not (fake_pool["results"] / "testbeds" / "excluded").exists()
    tries = json.loads((run_dir / "attempts.json").read_text())
    assert [t["valid"] for t in tries] == [False, False]
    ctl = json.loads((run_dir / "controller.json").read_text())
    lease = ctl["lease"]
    assert lease["member"] == "tb" and lease["kind"] == "local-vm" and lease["host"] == "127.0.0.1"
    assert lease["port"] == 40002 and lease["acquired_utc"].startswith(t0[:4])
    assert lease["released_utc"] >= lease["acquired_utc"]
    assert json.loads((run_dir / "attempts" / "1" / "controller.json").read_text())["lease"] == lease   # one lease
    assert fake_pool["ups"] == ["tb"]          # brought up (provisioned with this code) once, under the lease


def test_an_interrupted_job_records_when_its_lease_ended(fake_pool):
    """Ctrl-C during attempt 2: attempt 1 (invalid, kept) says when the lease it ran under ended, and the
    controller's log says the job was interrupted; the member is free again."""
    fake_pool["then"] = ["invalid", "interrupted"]
    # Ctrl-C raises KeyboardInterrupt even where pytest was started with SIGINT ignored (nohup ... &)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            fake_pool["main"](members(2), attempts=3)
    finally:
        signal.signal(signal.SIGINT, before)
    staging = fake_pool["results"] / "attempts" / SPEC["run_id"]
    assert run_step.finished_attempts(staging) == [1]
    lease = json.loads((staging / "1" / "controller.json").read_text())["lease"]
    assert lease["member"] == "tb" and lease["released_utc"] and lease["released_utc"] >= lease["acquired_utc"]
    assert f"run: {SPEC['run_id']} interrupted on tb; 1 attempt(s) made under this lease kept" \
        in (staging / "controller.log").read_text()
    again = pool.try_lease(members(1)[0])
    assert again is not None
    again.release()


def test_a_resumed_job_whose_attempts_are_done_needs_no_testbed(fake_pool):
    staging = fake_pool["results"] / "attempts" / SPEC["run_id"]
    (staging / "1").mkdir(parents=True)
    (staging / "1" / "fidelity.json").write_text(json.dumps({"valid": True, "reasons": []}))
    (staging / "1" / "DONE").write_text("")
    assert fake_pool["main"]([]) == 0          # an empty pool: it would fail if it leased
    assert fake_pool["ups"] == [] and (fake_pool["results"] / "runs" / SPEC["run_id"] / "DONE").exists()


# ---------------------------------------------------------------- up-all, down-all, connection options

def test_up_all_brings_members_up_at_once_each_under_its_lease(tmp_path, monkeypatch):
    both = threading.Barrier(2, timeout=10)      # each up waits for the other: only concurrent ups pass
    seen = []

    def up(m, out=None):
        assert pool.try_lease(m) is None          # held by up-all while it works
        seen.append(m["id"])
        both.wait()
        print(f"provisioned {m['id']}", file=out)
    held = pool.try_lease(members(3)[2])          # another pipeline's
    try:
        assert testbeds.up_all(members(3), limit=3, log_dir=tmp_path / "logs", up_one=up) == 0
    finally:
        held.release()
    assert sorted(seen) == ["tb", "tb-2"]
    assert (tmp_path / "logs" / "up-tb-2.log").read_text() == "provisioned tb-2\n"
    assert pool.try_lease(members(1)[0]) is not None      # released


def test_up_all_leaves_out_a_member_that_cannot_come_up(tmp_path, monkeypatch):
    def up(m, out=None):
        if m["id"] == "tb-2":
            raise SystemExit("favorvm: error: QEMU exited with status 1 while booting tb-2")
    monkeypatch.setattr(testbeds, "dead_reason", lambda m: "VM tb-2 is not running" if m["id"] == "tb-2" else None)
    excl = tmp_path / "excluded"
    assert testbeds.up_all(members(2), excluded_dir=excl, up_one=up) == 1
    assert list(pool.excluded(excl)) == ["tb-2"] and "QEMU exited" in pool.excluded(excl)["tb-2"]["reason"]
    assert testbeds.up_all(members(2), excluded_dir=excl, limit=1, up_one=lambda m, out=None: None) == 0


def test_down_all_leaves_a_guest_another_pipeline_holds(monkeypatch):
    stopped = []
    monkeypatch.setattr(testbeds, "down", lambda m: stopped.append(m["id"]))
    ms = members(3)
    ms[2]["keep_running"] = True
    held = pool.try_lease(ms[1])
    try:
        testbeds.down_all(ms)
    finally:
        held.release()
    assert stopped == ["tb"]


def test_ssh_member_connects_with_its_own_known_hosts(inventory, monkeypatch):
    """target() of an ssh member: its known_hosts file in the cache, accept-new; the ssh client puts it
    ahead of the inventory's own args, and Ansible gets the same as its ansible_ssh_common_args."""
    need_ansible_inventory()
    m = validate(smoke(kind="ssh", inventory=str(inventory), host="node1"))["pool"]["members"][0]
    t = testbeds.target(m)
    assert t["host"] == "192.0.2.11" and t["known_hosts"] == str(pool.known_hosts_file(m["id"]))
    assert t["host_key_checking"] == "accept-new"
    t["ssh_args"] = '-o StrictHostKeyChecking=no -o "ProxyCommand=ssh -W [%h]:%p jump"'
    assert testbeds.connect(t).common_args == ["-o", f"UserKnownHostsFile={t['known_hosts']}",
                                          "-o", "StrictHostKeyChecking=accept-new",
                                          "-o", "StrictHostKeyChecking=no", "-o", "ProxyCommand=ssh -W [%h]:%p jump"]
    cmd = run_step.remote_command(t, Path("/s/run.json"), Path("/s/schedule.csv"), Path("/r/1"))
    assert cmd[cmd.index("--known-hosts") + 1] == t["known_hosts"]
    assert cmd[cmd.index("--host-key-checking") + 1] == "accept-new"
    # the runs (orchestrate.remote, from orchestrate.run_step's command line) check the key the same way
    from orchestrate import remote
    ssh = remote.Ssh(t["host"], t["port"], t["user"], known_hosts=t["known_hosts"], ssh_args=t["ssh_args"],
                     host_key_checking="accept-new")
    assert ssh.opts[:4] == testbeds.connect(t).common_args[:4]

    ran = []

    def fake_run(argv, *a, **kw):
        ran.append(argv)
        return subprocess.CompletedProcess(argv, 0, stdout="", stderr="")
    monkeypatch.setattr(testbeds, "target", lambda _m, state=None: t)
    monkeypatch.setattr(testbeds, "code_hash", lambda: "c0ffee")
    monkeypatch.setattr(testbeds.subprocess, "run", fake_run)
    testbeds.up(m)
    play = next(a for a in ran if str(a[0]).endswith("ansible-playbook"))
    extra = json.loads(play[play.index("-e") + 1])
    assert shlex.split(extra["ansible_ssh_common_args"]) == testbeds.connect(t).common_args
    marker = [a for a in ran if a[0] == "ssh"]
    assert marker and all(a[1:5] == testbeds.connect(t).common_args[:4] for a in marker)


# ---------------------------------------------------------------- the pipeline's plan

def test_snakemake_plans_two_runs_at_once_with_retries(tmp_path):
    """A dry run of the smoke config with a pool of 2: each run job takes one testbed (of 2), half the
    cores, and is retried after a failure."""
    cfg = smoke(kind="local-vm", vm_name="favorlab-smoke", count=2, retries=3)
    cfg["name"] = "pool-plan-test"
    p = tmp_path / "pool2.yaml"
    p.write_text(yaml.safe_dump(cfg))
    r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--forceall", "--configfile", str(p),
                        "--cores", "2", "--resources", "testbed=2"], cwd=REPO, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    jobs = out.split("rule ")
    runs = [j for j in jobs if j.startswith("run:")]
    assert len(runs) == 2 and all("testbed=1" in j for j in runs), runs
    assert "testbed pool of 2 (favorlab-smoke, favorlab-smoke-2): up to 2 runs at once" in out
    assert "retried 3 time(s)" in out
    assert "testbed.count 2 is above" in out or os.cpu_count() >= 4
    assert not (REPO / "results" / "pool-plan-test").exists()
    # and Snakemake's own view of the rule
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings, StorageSettings
    with SnakemakeApi(OutputSettings()) as api:
        wf = api.workflow(resource_settings=ResourceSettings(cores=2, resources={"testbed": 2}),
                          config_settings=ConfigSettings(configfiles=[p]), storage_settings=StorageSettings(),
                          snakefile=REPO / "Snakefile", workdir=REPO)
        rule = wf._workflow.get_rule("run")
        assert rule._restart_times == 3 and rule.resources["testbed"] == 1 and rule.resources["_cores"] == 1
