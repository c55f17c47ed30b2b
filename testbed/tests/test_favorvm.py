"""favorvm (testbed/vm/favorvm): package list, state/inventory, errors; (guest) boot twice and stop, and
Ansible again on the suites' provisioned guest changing nothing."""
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from importlib.machinery import SourceFileLoader
from pathlib import Path

import pytest
import yaml

from favorlab_testing import unavailable

REPO = Path(__file__).resolve().parents[2]
FAVORVM = REPO / "testbed" / "vm" / "favorvm"
_loader = SourceFileLoader("favorvm", str(FAVORVM))
fv = importlib.util.module_from_spec(importlib.util.spec_from_loader("favorvm", _loader))
_loader.exec_module(fv)
DEFAULTS = REPO / "ansible" / "roles" / "testbed_base" / "defaults" / "main.yml"


def test_package_lists_read_like_yaml():
    """favorvm's small reader sees the same lists as a YAML parser (what Ansible sees)."""
    for role, name in fv.ROLE_LISTS:
        text = (fv.ROLES / role / "defaults" / "main.yml").read_text()
        assert fv.read_role_lists(text)[name] == yaml.safe_load(text)[name], (role, name)
    assert "testbed_sysctls" not in fv.read_role_lists(DEFAULTS.read_text())   # a map, not a package list


def test_guest_packages_from_role_defaults():
    conf = fv.read_conf()
    pkgs = fv.guest_packages(conf["kernel_abi"])
    abi = conf["kernel_abi"]
    full = yaml.safe_load(DEFAULTS.read_text())
    for p in full["testbed_packages"]:
        assert p in pkgs
    assert f"linux-headers-{abi}-amd64" in pkgs and f"linux-image-{abi}-amd64" in pkgs
    for p in ("dkms", "gcc", "make", "libc6-dev", "mininet", "nginx-light", "wrk", "openssh-server", "python3-apt"):
        assert p in pkgs, p
    # a P4 config's prebuilt simple_switch/p4c need these in the guest, which has no network
    for p in yaml.safe_load((fv.ROLES / "p4_toolchain" / "defaults" / "main.yml").read_text())["p4_runtime_packages"]:
        assert p in pkgs, p
    assert not any("{{" in p for p in pkgs)


def test_cache_key_follows_inputs():
    conf = fv.read_conf()
    pkgs = fv.guest_packages(conf["kernel_abi"])
    k = fv.cache_key(conf, pkgs)
    assert k == fv.cache_key(dict(conf), list(pkgs))
    assert k != fv.cache_key(conf, pkgs + ["htop"])
    assert k != fv.cache_key(dict(conf, kernel_abi="6.1.0-99"), pkgs)
    # a file written into the image is part of it: an image built before a change is not reused
    files = dict(fv.GUEST_FILES)
    try:
        fv.GUEST_FILES["etc/hostname"] = "other\n"
        assert k != fv.cache_key(conf, pkgs)
    finally:
        fv.GUEST_FILES.clear()
        fv.GUEST_FILES.update(files)


def test_the_prebuilt_qdiscs_are_part_of_the_key_and_read_from_the_role(tmp_path, monkeypatch):
    """The image holds sch_favor built by DKMS from qdisc/ (provisioning then builds nothing under TCG): an edit
    of any source the role copies, or of its mode, is a new image; the base key, which prunes, stays."""
    role = yaml.safe_load((fv.QDISC_ROLE / "defaults" / "main.yml").read_text())
    pkg = fv.qdisc_package()
    assert pkg["sources"] == role["sch_favor_sources"] and pkg["version"] == role["sch_favor_version"]
    conf = fv.read_conf()
    pkgs = fv.guest_packages(conf["kernel_abi"])
    key, base = fv.cache_key(conf, pkgs), fv.cache_key(conf, pkgs, with_qdiscs=False)
    qdisc, orig = tmp_path / "qdisc", fv.QDISC
    shutil.copytree(orig, qdisc)
    monkeypatch.setattr(fv, "QDISC", qdisc)
    assert fv.cache_key(conf, pkgs) == key
    (qdisc / "include" / pkg_header(qdisc)).write_text("/* edited */\n")
    assert fv.cache_key(conf, pkgs) != key
    assert fv.cache_key(conf, pkgs, with_qdiscs=False) == base
    shutil.copytree(orig, qdisc, dirs_exist_ok=True)
    assert fv.cache_key(conf, pkgs) == key
    (qdisc / "sch_favor.c").chmod(0o600)
    assert fv.cache_key(conf, pkgs) != key


def pkg_header(qdisc):
    return next(p.relative_to(qdisc / "include") for p in sorted((qdisc / "include").rglob("*.h")))


def test_a_new_image_prunes_its_bases_other_builds_but_not_one_a_running_vm_boots_from(tmp_path, monkeypatch):
    """The same base's other builds go, another base's stay, and so does the image of a VM that is running; a
    stopped VM's state file (it stays after stop) keeps nothing."""
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path))
    images = tmp_path / "vm" / "images"
    for name, base in (("new", "B"), ("old", "B"), ("used", "B"), ("stopped", "B"), ("other", "C")):
        (images / name).mkdir(parents=True)
        (images / name / "manifest.json").write_text(json.dumps({"base_key": base}))
    for vm, image, pid in (("running", "used", 4242), ("idle", "stopped", 4343)):
        (tmp_path / "vm" / "run" / vm).mkdir(parents=True)
        (tmp_path / "vm" / "run" / vm / "state.json").write_text(json.dumps({"image": str(images / image),
                                                                             "pid": pid}))
    # pid_is_ours reads /proc: the running VM's QEMU is faked, the stopped one's PID is no QEMU of ours
    monkeypatch.setattr(fv, "pid_is_ours", lambda pid, overlay: pid == 4242)
    fv.prune_images(images, "new", "B")
    assert sorted(p.name for p in images.iterdir()) == ["new", "other", "used"]


def test_guest_runs_dhcp_on_its_qemu_nic_only():
    """DHCP runs on the QEMU NIC only: networkd matching Type=ether would run it on Mininet's veth ports
    too, and the requests (from 0.0.0.0) would reach the experiment's captures."""
    net = fv.GUEST_FILES["etc/systemd/network/10-virtio.network"]
    match = net.split("[Network]")[0]
    assert "Driver=virtio_net" in match and "Type=" not in match and "Name=" not in match


@pytest.mark.parametrize("text,msg", [
    ("testbed_packages: [a, b]\nfavor_build_packages:\n  - gcc\n", "block list"),
    ("testbed_packages:\n  - a\n  x: 1\nfavor_build_packages:\n  - gcc\n", "cannot read"),
    ("testbed_packages:\n  - bad name\nfavor_build_packages:\n  - gcc\n", "not a Debian package name"),
    ("testbed_packages:\n  - python3\n", "favor_build_packages"),
    ("testbed_packages:\n  - python3\nfavor_build_packages:\n  - \"{{ other_var }}\"\n", "not a Debian package"),
])
def test_bad_defaults_named(text, msg):
    with pytest.raises(fv.FavorvmError, match=msg):
        fv.guest_packages("6.1.0-50", text)


def test_bad_conf_named(tmp_path):
    p = tmp_path / "guest.conf"
    p.write_text("suite = bookworm\nmirror = http://x\nkernel_abi = 6.1\nkernel_version = 1\nimage_size = 1G\n")
    with pytest.raises(fv.FavorvmError, match="kernel_abi"):
        fv.read_conf(p)
    p.write_text("suite bookworm\n")
    with pytest.raises(fv.FavorvmError, match="key = value"):
        fv.read_conf(p)
    with pytest.raises(fv.FavorvmError, match="missing"):
        fv.read_conf(tmp_path / "nope.conf")


def test_missing_tool_names_package_and_fix(monkeypatch):
    monkeypatch.setattr(fv.shutil, "which", lambda n: None)
    with pytest.raises(fv.FavorvmError, match=r"qemu-system-x86.*scripts/bootstrap"):
        fv.need_tools("qemu-system-x86_64")


def test_bad_vm_name():
    with pytest.raises(fv.FavorvmError, match="VM name"):
        fv.run_dir("../etc")


def test_status_of_unknown_and_dead_vm(tmp_path):
    env = dict(os.environ, FAVORLAB_CACHE=str(tmp_path))
    p = subprocess.run([str(FAVORVM), "status", "--name", "nothere"], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and json.loads(p.stdout) == {"name": "nothere", "running": False}
    # a state file whose PID is alive but is not our QEMU (this test process) reads as not running
    d = tmp_path / "vm" / "run" / "ghost"
    d.mkdir(parents=True)
    (d / "state.json").write_text(json.dumps({"name": "ghost", "running": True, "pid": os.getpid(), "ssh_port": 1}))
    p = subprocess.run([str(FAVORVM), "status", "--name", "ghost"], capture_output=True, text=True, env=env)
    assert json.loads(p.stdout)["running"] is False
    p = subprocess.run([str(FAVORVM), "ssh", "--name", "ghost", "true"], capture_output=True, text=True, env=env)
    assert p.returncode == 1 and "not running" in p.stderr


def test_inventory_is_what_ansible_and_remote_read(tmp_path, monkeypatch):
    """The inventory favorvm writes gives Ansible the same SSH coordinates remote.vm_target reads."""
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path))
    d = tmp_path / "vm" / "run" / "t1"
    d.mkdir(parents=True)
    st = {"name": "t1", "running": False, "pid": None, "ssh_host": "127.0.0.1", "ssh_port": 40001,
          "ssh_user": "root", "ssh_key": "/k/id_ed25519", "known_hosts": str(d / "known_hosts"),
          "inventory": str(d / "inventory.yml"), "inventory_host": "favorlab-vm-t1"}
    (d / "inventory.yml").write_text(fv.inventory_text("t1", st["inventory_host"], st))
    fv.write_state(d, st)
    ansible_inv = Path(sys.executable).parent / "ansible-inventory"
    if not ansible_inv.exists():
        pytest.skip("ansible-inventory is not in this venv (pip install -r requirements.txt)")
    out = subprocess.run([str(ansible_inv), "-i", st["inventory"], "--host", st["inventory_host"]],
                         capture_output=True, text=True, cwd=REPO / "ansible", check=True)
    hv = json.loads(out.stdout)
    assert hv["ansible_host"] == "127.0.0.1" and hv["ansible_port"] == 40001 and hv["ansible_user"] == "root"
    assert hv["ansible_ssh_private_key_file"] == "/k/id_ed25519"
    assert f"UserKnownHostsFile={st['known_hosts']}" in hv["ansible_ssh_common_args"]
    assert hv["ansible_python_interpreter"] == "/usr/bin/python3" and hv["testbed_apt_update"] is False
    from orchestrate import remote
    t = remote.vm_target("t1")
    assert (t["host"], t["port"], t["user"], t["key"], t["known_hosts"]) == \
        ("127.0.0.1", 40001, "root", "/k/id_ed25519", st["known_hosts"])


# ---------------------------------------------------------------- guest: boot twice and stop; provision again

def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (the QEMU is reparented to this machine's init, which may
    reap it a little later)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.guest
@pytest.mark.slow
def test_boot_twice_is_one_vm_and_stop_leaves_nothing():
    """A guest of its own (the lifecycle is what is tested): a second start is the same VM, the kernel
    is the one the image's manifest pins, and stop ends its QEMU, by its PID when the guest hangs, and removes
    its overlay."""
    if not shutil.which("qemu-system-x86_64") or not shutil.which("debootstrap"):
        unavailable("qemu-system-x86_64 or debootstrap is missing (./favorlab test installs them)")
    if os.geteuid() != 0:
        unavailable("building the guest image needs root (debootstrap)")
    name = "vmtest"
    t0 = time.time()
    p = subprocess.run([str(FAVORVM), "start", "--name", name], capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, p.stderr[-3000:]
    st = json.loads(p.stdout)
    print(f"start: {time.time() - t0:.1f} s (boot {st['boot_s']} s, {st['accel']})")
    pid = st["pid"]
    try:
        assert st["running"] and st["ssh_user"] == "root"
        again = json.loads(subprocess.run([str(FAVORVM), "start", "--name", name], capture_output=True,
                                          text=True, check=True).stdout)
        assert again["pid"] == pid                       # idempotent: the same VM
        man = json.loads((Path(st["image"]) / "manifest.json").read_text())
        uname = subprocess.run([str(FAVORVM), "ssh", "--name", name, "uname", "-r"], capture_output=True,
                               text=True, timeout=60)
        assert uname.stdout.strip() == man["kernel"]["release"] == st["kernel"]
        assert man["packages"]["linux-image-" + st["kernel"]] == man["kernel"]["version"]
        # the image holds favorlab's qdiscs built by DKMS for its kernel (provisioning then builds nothing)
        dkms = subprocess.run([str(FAVORVM), "ssh", "--name", name, "dkms", "status", "-m", "sch_favor", "-v",
                               man["sch_favor"]["version"], "-k", st["kernel"]], capture_output=True, text=True,
                              timeout=120)
        assert dkms.stdout.strip().endswith(": installed"), dkms.stdout + dkms.stderr
        assert man["sch_favor"]["sources_sha256"] == fv.qdisc_package()["sha256"]
        # a hung guest (its QEMU stopped: it answers nothing) is ended by its PID, not waited for
        os.kill(pid, signal.SIGSTOP)
        t1 = time.time()
        hung = subprocess.run([str(FAVORVM), "stop", "--name", name, "--wait", "5"], capture_output=True,
                              text=True, timeout=120)
        print(f"stop of a hung guest: {time.time() - t1:.1f} s")
        assert hung.returncode == 0, hung.stderr
        assert "did not power off within 5 s: killing QEMU pid" in hung.stderr, hung.stderr
    finally:
        subprocess.run([str(FAVORVM), "stop", "--name", name], capture_output=True, timeout=180)
    assert not _alive(pid), f"QEMU pid {pid} left behind"
    s = json.loads(subprocess.run([str(FAVORVM), "status", "--name", name], capture_output=True, text=True).stdout)
    assert s["running"] is False and not (Path(st["inventory"]).parent / "overlay.qcow2").exists()


def test_kernel_pin_and_loud_fallback(monkeypatch, capsys):
    """A mirror without the pinned ABI: the build says so loudly and records what it used instead."""
    conf = {"suite": "bookworm", "mirror": "http://m", "kernel_abi": "6.1.0-50", "kernel_version": "6.1.176-1"}
    answers = {}

    def fake_chroot(root, cmd, check=True, capture=False):
        for pat, out in answers.items():
            if pat in cmd:
                return subprocess.CompletedProcess(cmd, 0, out, "")
        return subprocess.CompletedProcess(cmd, 0, "", "")
    monkeypatch.setattr(fv, "chroot", fake_chroot)
    answers = {"linux-image-6.1.0-50-amd64": "6.1.176-1\n"}
    assert fv.pick_kernel(Path("/x"), conf) == {"abi": "6.1.0-50", "version": "6.1.176-1", "pinned": True,
                                                 "fallback": None}
    answers = {"show --no-all-versions linux-image-amd64 ": "linux-image-6.1.0-51-amd64 (= 6.1.180-1)\n",
               "linux-image-6.1.0-51-amd64": "6.1.180-1\n"}
    k = fv.pick_kernel(Path("/x"), conf)
    assert k["abi"] == "6.1.0-51" and k["version"] == "6.1.180-1" and not k["pinned"]
    assert "FALLING BACK" in k["fallback"] and "FALLING BACK" in capsys.readouterr().err
    answers = {}
    with pytest.raises(fv.FavorvmError, match="neither the pinned"):
        fv.pick_kernel(Path("/x"), conf)


# ------------------------------------------------------------------ the host survives a killed build

def test_remove_tree_never_deletes_through_a_mount(tmp_path):
    """A bind mount left under a build directory (the host's /dev, in the real case) is detached, not
    emptied: a stand-in directory is bind-mounted into a tree, the tree removed, the stand-in intact.
    Done in a private mount namespace (unshare -m) so that nothing is mounted on the host even briefly."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) for a private mount namespace")
    host = tmp_path / "host-dev"
    host.mkdir()
    (host / "null").write_text("keep me")
    tree = tmp_path / "build.partial"
    (tree / "root" / "dev").mkdir(parents=True)
    (tree / "root" / "file").write_text("x")
    script = f"""
import subprocess, sys
from importlib.machinery import SourceFileLoader
import importlib.util
spec = importlib.util.spec_from_loader("favorvm", SourceFileLoader("favorvm", {str(FAVORVM)!r}))
fv = importlib.util.module_from_spec(spec); spec.loader.exec_module(fv)
from pathlib import Path
subprocess.run(["mount", "--bind", {str(host)!r}, {str(tree / "root" / "dev")!r}], check=True)
assert fv.mounts_under(Path({str(tree)!r})) == [Path({str(tree / "root" / "dev")!r})]
fv.remove_tree(Path({str(tree)!r}))
print("removed")
"""
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, "-c", script],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "removed" in p.stdout, p.stderr
    assert not tree.exists()
    assert (host / "null").read_text() == "keep me"


def _dev_snapshot():
    null = os.stat("/dev/null")
    return sorted(os.listdir("/dev")), (os.major(null.st_rdev), os.minor(null.st_rdev))


def _chrooted_into(root: Path) -> list[int]:
    """PIDs whose root directory or command line is inside the build's root (the build's own processes)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if os.readlink(d / "root").startswith(str(root)) or \
                    str(root).encode() in (d / "cmdline").read_bytes():
                pids.append(int(d.name))
        except OSError:
            pass
    return pids


class _Build:
    """`favorvm build --force` in the background, its log lines collected as they come."""

    def __init__(self):
        import threading
        self.p = subprocess.Popen([str(FAVORVM), "build", "--force"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.lines = []
        threading.Thread(target=lambda: self.lines.extend(iter(self.p.stderr.readline, "")), daemon=True).start()

    def wait_for(self, text, timeout):
        end = time.time() + timeout
        while time.time() < end:
            if any(text in l for l in self.lines):
                return
            assert self.p.poll() is None, "build ended early:\n" + "".join(self.lines[-30:])
            time.sleep(0.5)
        pytest.fail(f"no {text!r} in the build log within {timeout} s:\n" + "".join(self.lines[-30:]))

    def kill(self):
        os.kill(self.p.pid, 9)          # the favorvm process itself, as `kill -9 PID` would
        self.p.wait(timeout=30)


@pytest.mark.slow
def test_build_killed_mid_chroot_leaves_the_host_intact():
    """SIGKILL to a build while it installs packages in its chroot (the host's /dev bind-mounted into
    it): nothing stays mounted on the host, the build's processes die with it, and the next build
    clears the half-built tree without touching the host's /dev."""
    if os.geteuid() != 0 or not shutil.which("debootstrap") or not shutil.which("unshare"):
        unavailable("building the guest image needs root, debootstrap and unshare (./favorlab test installs them)")
    work = Path(str(fv.image_dir()) + ".partial")
    before = _dev_snapshot()
    b = _Build()
    try:
        b.wait_for("packages into the image", timeout=900)   # after apt-get update in the chroot: all mounted
        assert fv.mounts_under(work) == [], "the build's mounts are visible on the host"
        b.kill()
        end = time.time() + 20
        while _chrooted_into(work / "root") and time.time() < end:
            time.sleep(0.5)
        assert _chrooted_into(work / "root") == [], "the killed build's processes are still running"
        assert fv.mounts_under(work) == [], "a killed build left mounts on the host"
        assert _dev_snapshot() == before
        again = _Build()   # clears the half-built tree, then starts debootstrap
        try:
            again.wait_for("$ debootstrap", timeout=300)
        finally:
            again.kill()
        assert _dev_snapshot() == before, "the host's /dev changed"
    finally:
        if b.p.poll() is None:
            b.kill()
        for m in fv.mounts_under(work):   # only if the build leaked mounts: detach them, never delete through
            subprocess.run(["umount", "-l", str(m)])
        end = time.time() + 20
        while _chrooted_into(work / "root") and time.time() < end:
            time.sleep(0.5)
        fv.remove_tree(work)
    assert _dev_snapshot() == before


# ------------------------------------------------------------------ the clock option

def _command(clock, accel="tcg", cpus=1, tmp=Path("/c")):
    man = {"boot": {"kernel": "vmlinux", "initrd": "initrd.img"}}
    return fv.qemu_command("n", tmp / "img", man, accel, clock, cpus, 2048, tmp / "o.qcow2", tmp / "c.log", 40001)


def test_virtual_clock_reaches_qemus_command_line():
    """--clock virtual: QEMU counts instructions for the guest's clock, single-threaded, one vCPU; the real
    clock keeps the multi-threaded TCG (or KVM) command line and has no -icount."""
    cmd = _command("virtual")
    i = cmd.index("-icount")
    assert cmd[i + 1] == "shift=0,sleep=off"
    assert cmd[cmd.index("-accel") + 1] == "tcg,thread=single" and cmd[cmd.index("-smp") + 1] == "1"
    real = _command("real", cpus=2)
    assert "-icount" not in real and real[real.index("-accel") + 1] == "tcg,thread=multi"
    assert real[real.index("-smp") + 1] == "2"
    assert "-icount" not in _command("real", accel="kvm", cpus=2)
    # from the memory on, the same guest: one place builds both
    assert cmd[cmd.index("-m"):] == real[real.index("-m"):]


@pytest.mark.parametrize("accel,cpus", [("kvm", 1), ("tcg", 2)])
def test_virtual_clock_refuses_what_icount_cannot_run(accel, cpus):
    with pytest.raises(fv.FavorvmError, match="TCG with 1 vCPU"):
        _command("virtual", accel=accel, cpus=cpus)
    with pytest.raises(fv.FavorvmError, match="clock 'fake'"):
        _command("fake")


def test_virtual_clock_has_one_vcpu(monkeypatch):
    monkeypatch.setenv("FAVORLAB_VM_CPUS", "2")
    assert fv.vm_cpus("virtual", None) == 1 and fv.vm_cpus("real", None) == 2 and fv.vm_cpus("real", 3) == 3
    with pytest.raises(fv.FavorvmError, match="1 vCPU"):
        fv.vm_cpus("virtual", 2)


def test_a_running_guest_of_the_other_clock_is_never_reused(tmp_path, monkeypatch):
    """start on a running guest of the other clock fails naming the fix; a guest whose state has no clock
    (booted before the option) counts as real."""
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path))
    d = tmp_path / "vm" / "run" / "g"
    d.mkdir(parents=True)
    st = {"name": "g", "running": True, "pid": 4242, "ssh_port": 1}
    fv.write_state(d, st)
    monkeypatch.setattr(fv, "pid_is_ours", lambda pid, overlay: pid == 4242)
    with pytest.raises(fv.FavorvmError, match=r"running with the real clock, not the virtual.*favorvm stop --name g"):
        fv.start("g", None, 2048, None, clock="virtual")
    assert fv.start("g", None, 2048, None, clock="real")["pid"] == 4242      # same clock: only reported
    fv.write_state(d, dict(st, clock="virtual"))
    with pytest.raises(fv.FavorvmError, match="running with the virtual clock, not the real"):
        fv.start("g", None, 2048, None, clock="real")
    assert fv.start("g", None, 2048, None, clock="virtual")["pid"] == 4242


def test_a_virtual_pool_members_name_is_a_valid_vm_name():
    from orchestrate import pool
    longest = pool.vm_names("a" * 36 + pool.VIRTUAL_SUFFIX, 64)[-1]
    assert fv.run_dir(longest).name == longest
