"""Host-side checks of sch_favor's packaging: it builds against the Debian headers sets (guest ABI and
6.12), versions agree, the tc plugin loads into stock tc and uses only symbols tc exports, the trace
recorder parses the tracepoint's lines."""
import errno
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contract import qdiscs
from favorlab_testing import CI, unavailable

QDISC = Path(__file__).resolve().parents[1]
REPO = QDISC.parent


def modules():
    """The modules Kbuild builds (obj-m), e.g. ['sch_favor', 'sch_run2c']."""
    return list(qdiscs.modules())


def test_versions_agree():
    dkms = re.search(r'PACKAGE_VERSION="([^"]+)"', (QDISC / "dkms.conf").read_text()).group(1)
    role = re.search(r'sch_favor_version:\s*"([^"]+)"',
                     (REPO / "ansible/roles/favorlab_qdiscs/defaults/main.yml").read_text()).group(1)
    assert dkms == role
    for m in modules():
        version = re.search(r'#define \w+_VERSION\s+"([^"]+)"', (QDISC / f"{m}.c").read_text()).group(1)
        assert version == dkms, m


def test_every_module_is_packaged_loaded_and_has_its_plugin_and_man_page():
    """A qdisc added to Kbuild but not to dkms.conf, the role or the plugins would build here and be missing on
    every testbed."""
    built = set(re.findall(r'BUILT_MODULE_NAME\[\d+\]="([^"]+)"', (QDISC / "dkms.conf").read_text()))
    assert built == set(modules())
    defaults = (REPO / "ansible/roles/favorlab_qdiscs/defaults/main.yml").read_text()
    qdiscs = set(re.search(r"sch_favor_qdiscs:\s*\[([^\]]*)\]", defaults).group(1).replace(" ", "").split(","))
    assert qdiscs == {m.removeprefix("sch_") for m in modules()}
    for q in qdiscs:
        assert (QDISC / "tc" / f"q_{q}.c").is_file() and (QDISC / f"tc-{q}.8").is_file(), q
        assert f"tc/q_{q}.so" in (QDISC / "Makefile").read_text(), q


def test_every_module_keys_its_flow_hash_with_its_own_siphash_key():
    """A jhash seed (32 bits) can be recovered from observed collisions, after which a sender can aim every
    flow at one bucket. A source check, as the hash runs only in the kernel (the guest tests put traffic
    through each module): flow_hash.h hashes with siphash under a siphash_key_t, and every module that hashes
    flows draws its own key with get_random_bytes at init and never a jhash."""
    code = re.sub(r"/\*.*?\*/", "", (QDISC / "flow_hash.h").read_text(), flags=re.S)   # comments may say jhash
    assert "siphash(w, sizeof(w), key)" in code and "jhash" not in code
    for m in modules():
        src = (QDISC / f"{m}.c").read_text()
        if "favorlab_flow_hash(" not in src:
            continue
        assert re.search(r"siphash_key_t\s+(\w+);", src), m
        key = re.search(r"siphash_key_t\s+(\w+);", src).group(1)
        assert f"get_random_bytes(&q->{key}, sizeof(q->{key}))" in src, m
        assert "jhash" not in src, m


def test_role_copies_every_module_source():
    """The DKMS tree the role copies (sch_favor_sources) and the tree build-check builds hold every source file
    of qdisc/: a header missing from either builds here and fails on the testbed."""
    import yaml
    defaults = yaml.safe_load((REPO / "ansible/roles/favorlab_qdiscs/defaults/main.yml").read_text())
    tasks = yaml.safe_load((REPO / "ansible/roles/favorlab_qdiscs/tasks/main.yml").read_text())
    copy = next(t for t in tasks if t["name"].startswith("DKMS source tree"))
    assert copy["ansible.builtin.script"]["cmd"].startswith("dkms_build.sh ")
    assert "{{ sch_favor_sources | map('quote') | join(' ') }}" in copy["ansible.builtin.script"]["cmd"]
    listed = set(defaults["sch_favor_sources"])
    needed = {"dkms.conf", "Kbuild", "Makefile", "include"} | {p.name for p in QDISC.glob("*.[ch]")}
    assert listed == needed, (needed - listed, listed - needed)
    assert set(load_build_check().SOURCES) == needed - {"dkms.conf"}


def load_build_check():
    from importlib.machinery import SourceFileLoader
    path = str(QDISC / "tools" / "build-check")   # a script without .py: name its loader
    spec = importlib.util.spec_from_loader("build_check", SourceFileLoader("build_check", path))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def real_depends(pkg):
    """The Depends line of a headers package as bookworm ships it (kept as test data: apt-cache show)."""
    text = (QDISC / "tests" / "data" / f"{pkg}.stanza").read_text()
    return re.search(r"^Depends: (.*)$", text, re.M).group(1)


# Stand-in for `apt-cache madison` (newest first, as it prints) and dpkg's version comparison: the test
# is about reading the Depends line, not about the machine's apt lists.
APT = {"linux-headers-6.1.0-50-common": ["6.1.176-1"],
       "linux-kbuild-6.1": ["6.1.192-2", "6.1.176-1"],
       "linux-headers-6.12.117+deb12-common": ["6.12.117-1~deb12u1"],
       "linux-kbuild-6.12.117+deb12": ["6.12.117-1~deb12u1"]}


def test_depends_parsing_on_the_real_headers_packages():
    bc = load_build_check()
    d61 = bc.parse_depends(real_depends("linux-headers-6.1.0-50-amd64"))
    assert [("linux-headers-6.1.0-50-common", "=", "6.1.176-1")] in d61
    assert [("linux-kbuild-6.1", ">=", "6.1.176-1")] in d61
    d612 = bc.parse_depends(real_depends("linux-headers-6.12.117+deb12-amd64"))
    # the dependency the old regex missed: no version in parentheses
    assert [("linux-kbuild-6.12.117+deb12", None, None)] in d612
    assert [("linux-image-6.12.117+deb12-amd64", "=", "6.12.117-1~deb12u1"),
            ("linux-image-6.12.117+deb12-amd64-unsigned", "=", "6.12.117-1~deb12u1")] in d612
    assert bc.parse_depends("libc6:any (>= 2.36), foo") == [[("libc6", ">=", "2.36")], [("foo", None, None)]]
    with pytest.raises(ValueError, match="cannot read"):
        bc.parse_depends("linux-kbuild-6.1 (>= )")


def test_build_deps_take_kbuild_whatever_the_form_of_the_line():
    bc = load_build_check()
    ok = lambda have, op, want: op is None or (have == want if op == "=" else have >= want)  # noqa: E731
    v = lambda name: APT.get(name, [])  # noqa: E731
    # 6.1: the exact -common, and the kbuild of the same upload although a newer one satisfies >=
    assert bc.build_deps("linux-headers-6.1.0-50-amd64", real_depends("linux-headers-6.1.0-50-amd64"), v, ok) == \
        ["linux-headers-6.1.0-50-common=6.1.176-1", "linux-kbuild-6.1=6.1.176-1"]
    # 6.12: kbuild named without a version is fetched too (the fresh-machine failure)
    assert bc.build_deps("linux-headers-6.12.117+deb12-amd64", real_depends("linux-headers-6.12.117+deb12-amd64"),
                         v, ok) == ["linux-headers-6.12.117+deb12-common=6.12.117-1~deb12u1",
                                    "linux-kbuild-6.12.117+deb12=6.12.117-1~deb12u1"]


def test_build_deps_name_what_cannot_be_had():
    bc = load_build_check()
    dep = real_depends("linux-headers-6.12.117+deb12-amd64")
    no_kbuild = lambda name: [] if "kbuild" in name else APT.get(name, [])  # noqa: E731
    with pytest.raises(bc.MissingPackage, match=r"linux-kbuild-6\.12\.117\+deb12 \(needed by .*apt-get update"):
        bc.build_deps("linux-headers-6.12.117+deb12-amd64", dep, no_kbuild, lambda *a: True)
    too_old = lambda name: ["6.1.100-1"] if "kbuild" in name else APT.get(name, [])  # noqa: E731
    with pytest.raises(bc.MissingPackage, match=r"linux-kbuild-6\.1 \(>= 6\.1\.176-1\).*apt has 6\.1\.100-1"):
        bc.build_deps("linux-headers-6.1.0-50-amd64", real_depends("linux-headers-6.1.0-50-amd64"), too_old,
                      lambda have, op, want: have >= want)
    with pytest.raises(bc.MissingPackage, match="depends on no kbuild package"):
        bc.build_deps("linux-headers-x-amd64", "linux-headers-x-common (= 1)", lambda n: ["1"], lambda *a: True)


def test_version_comparison_is_dpkgs():
    if not shutil.which("dpkg"):
        pytest.skip("needs dpkg (Debian) for its version comparison")
    bc = load_build_check()
    assert bc.version_ok("6.12.117-1~deb12u1", ">=", "6.12.117-1~deb12u0")
    assert not bc.version_ok("6.12.117-1~deb12u1", ">=", "6.12.117-1")   # '~' sorts before everything
    assert bc.version_ok("1:1.0", ">>", "9.9")                            # an epoch wins


@pytest.mark.slow
def test_module_builds_against_debian_headers():
    """tools/build-check: the guest's pinned ABI and the newest 6.12 (downloads ~30 MB once into the cache)."""
    if not shutil.which("apt-get") or not shutil.which("dpkg"):
        pytest.skip("needs apt-get and dpkg (Debian) to fetch the kernel headers")
    p = subprocess.run([sys.executable, str(QDISC / "tools" / "build-check")], capture_output=True, text=True,
                       timeout=900)
    print(p.stdout)
    if "SKIP" in p.stdout and "OK" not in p.stdout:
        unavailable(f"kernel headers not available: {p.stdout.strip()}", CI)
    assert p.returncode == 0, p.stdout[-6000:] + p.stderr[-2000:]
    assert p.stdout.count("OK ") == 2, p.stdout


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    """Every qdisc's tc plugin, built as the role builds it, in one TC_LIB_DIR."""
    if not shutil.which("gcc") or not shutil.which("tc"):
        pytest.skip("needs gcc and tc (iproute2)")
    d = tmp_path_factory.mktemp("tc")
    for m in modules():
        q = m.removeprefix("sch_")
        subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", f"-I{QDISC / 'include'}",
                        "-o", str(d / f"q_{q}.so"), str(QDISC / "tc" / f"q_{q}.c")], check=True)
    return d


def test_plugin_uses_only_symbols_tc_exports(plugin):
    tc = shutil.which("tc")
    exported = set(subprocess.run(["nm", "-D", "--defined-only", os.path.realpath(tc)], capture_output=True,
                                  text=True, check=True).stdout.split())
    for so in sorted(plugin.glob("q_*.so")):
        undef = subprocess.run(["nm", "-D", "--undefined-only", str(so)], capture_output=True,
                               text=True, check=True).stdout.split()
        ours = [s for s in undef if s not in ("U", "w") and "@" not in s and not s.startswith("_")]
        assert ours and all(s in exported for s in ours), (so.name, [s for s in ours if s not in exported])


def stock_tc(plugin, qdisc, args):
    """tc qdisc add with the plugin, in a private network namespace (needs root)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root for a private network namespace")
    return subprocess.run(["unshare", "-n", "tc", "qdisc", "add", "dev", "lo", "root", qdisc, *args],
                          capture_output=True, text=True, env=dict(os.environ, TC_LIB_DIR=str(plugin)))


def test_run2c_plugin_parses_options_in_stock_tc(plugin):
    """The host kernel has no sch_run2c: what the plugin refuses is refused before the kernel is asked."""
    for args, message in [(["limit", "0"], '"limit" needs a number of packets from 1 to 1048576'),
                          (["threshold", "70000"], '"threshold" needs a number of packets from 1 to 65535'),
                          (["mss"], '"mss" needs a number of bytes from 1 to 65535'),
                          (["buckets", "3"], '"buckets" needs a power of two'),
                          (["bogus"], 'unknown option "bogus"')]:
        p = stock_tc(plugin, "run2c", args)
        assert p.returncode != 0 and message in p.stderr, (args, p.stderr)
    p = stock_tc(plugin, "run2c", ["limit", "8", "threshold", "20", "mss", "1448", "buckets", "64"])
    assert "run2c:" not in p.stderr and ("unknown" in p.stderr or p.returncode == 0), p.stderr


def test_plugin_parses_options_in_stock_tc(plugin):
    """tc dlopens the plugin and parses; the host kernel has no sch_favor, so the kernel then refuses."""
    def tc(args):
        return stock_tc(plugin, "favor", args)
    p = tc(["limit", "0"])
    assert p.returncode != 0 and '"limit" needs a number of packets >= 1' in p.stderr
    p = tc(["buckets", "3"])
    assert p.returncode != 0 and "power of two" in p.stderr
    p = tc(["flowkey", "bogus"])
    assert p.returncode != 0 and 'unknown flowkey "bogus"' in p.stderr
    p = tc(["flowkey", "dst", "flowkey", "bogus"])    # was accepted as flowkey dst
    assert p.returncode != 0 and '"flowkey" given twice' in p.stderr
    p = tc(["favored_burst", "x"])
    assert p.returncode != 0 and '"favored_burst" needs a number of packets' in p.stderr
    p = tc(["limit", "8", "nopushout", "flowkey", "dst", "buckets", "64", "favored_burst", "1"])   # the kernel decides
    assert "favor:" not in p.stderr and ("unknown" in p.stderr or p.returncode == 0), p.stderr


@pytest.mark.parametrize("qdisc", qdiscs.kinds())
def test_every_plugin_parses_memory_limit_in_stock_tc(plugin, qdisc):
    """memory_limit in tc's size units: a missing value, a word that is no size or 0 is refused by the plugin with
    the qdisc's name; a size goes on to the kernel (the host's has no favorlab qdisc: it refuses the kind)."""
    for args in (["memory_limit"], ["memory_limit", "lots"], ["memory_limit", "0"]):
        p = stock_tc(plugin, qdisc, args)
        assert p.returncode != 0 and f'{qdisc}: "memory_limit" needs a' in p.stderr, (args, p.stderr)
    for size in ("64kb", "1mb", "65536"):
        p = stock_tc(plugin, qdisc, ["memory_limit", size])
        assert f"{qdisc}:" not in p.stderr and ("unknown" in p.stderr or p.returncode == 0), (size, p.stderr)


def load_tracer():
    spec = importlib.util.spec_from_file_location("favor_trace", QDISC / "tools" / "favor_trace.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


# events/favor/favor_enqueue/format as the guest's kernel (6.1) writes it
FAVOR_ENQUEUE_FORMAT = """name: favor_enqueue
ID: 1530
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char dev[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:char src[40];\toffset:24;\tsize:40;\tsigned:0;
\tfield:char dst[40];\toffset:64;\tsize:40;\tsigned:0;
\tfield:u16 sport;\toffset:104;\tsize:2;\tsigned:0;
\tfield:u16 dport;\toffset:106;\tsize:2;\tsigned:0;
\tfield:u8 proto;\toffset:108;\tsize:1;\tsigned:0;
\tfield:u8 verdict;\toffset:109;\tsize:1;\tsigned:0;
\tfield:u32 qlen;\toffset:112;\tsize:4;\tsigned:0;

print fmt: "dev=%s verdict=%s ..."
"""


def test_trace_buffer_is_sized_to_hold_the_run(monkeypatch, tmp_path):
    """The recorder's ring buffer holds a run's expected events twice over (so nothing is copied out, and
    formatted by the kernel, while the run is measured), never less than the default, never more than a
    quarter of the memory over all CPUs; where the kernel cannot allocate it, it is halved."""
    ft = load_tracer()
    # a 116-byte entry is over the 112 bytes of a small event: 4-byte header, 4-byte length, the entry
    assert ft.event_bytes(FAVOR_ENQUEUE_FORMAT) == 124
    # the figures config's 100 Mb/s FaQ run: 1.25 M events at most (favortrace.expect_events), a 2 GiB guest
    kb = ft.buffer_kb_for(1_250_000, 124, 2_014_152, 1)
    assert 2 * 1_250_000 * 124 / 1024 <= kb <= 2 * 1_250_000 * 124 / 1024 * 1.01
    assert ft.buffer_kb_for(1_250_000, 124, 2_014_152, 2) == 2_014_152 // 4 // 2       # the memory cap
    assert ft.buffer_kb_for(1000, 124, 2_014_152, 1) == ft.DEFAULT_BUFFER_KB          # never below the default
    assert ft.buffer_kb_for(0, 124, 1 << 30, 64) == ft.DEFAULT_BUFFER_KB

    inst = tmp_path / "instance"
    inst.mkdir()
    real_write = Path.write_text

    def small_kernel(self, text, *a, **kw):
        if self.name == "buffer_size_kb" and int(text) > 100_000:
            raise OSError(errno.ENOMEM, "Cannot allocate memory")
        return real_write(self, text, *a, **kw)
    monkeypatch.setattr(Path, "write_text", small_kernel)
    assert ft.set_buffer_kb(inst, 300_000) == 75_000
    assert (inst / "buffer_size_kb").read_text() == "75000"
    assert ft.set_buffer_kb(inst, 20_000) == 20_000


def test_trace_line_parsing():
    ft = load_tracer()
    line = ("          python3-312     [000] b..1.   123.456789: favor_enqueue: dev=rl-eth1 "
            "verdict=pushout_victim src=10.0.1.1 dst=10.0.2.3 sport=40000 dport=5001 proto=6 qlen=8")
    assert ft.parse(line, 1000.0) == ["1123.456789", "rl-eth1", "pushout_victim", "10.0.1.1", "10.0.2.3",
                                      "40000", "5001", "6", "8"]
    arp = "  <idle>-0 [001] ..s1. 5.000000: favor_enqueue: dev=d0 verdict=drop_favored src= dst= sport=0 dport=0 proto=0 qlen=4"
    assert ft.parse(arp, 0)[2:5] == ["drop_favored", "", ""]
    assert ft.parse("  bash-1 [000] ..... 1.0: sched_switch: prev=a", 0) is None
    assert ft.COLUMNS == ["t", "dev", "verdict", "src", "dst", "sport", "dport", "proto", "qlen"]


def test_trace_csv_is_what_analysis_reads(tmp_path):
    from analysis.tables.favor import read_favor_trace
    ft = load_tracer()
    f = tmp_path / "favor-trace.csv"
    rows = [ft.parse(l, 0) for l in [
        " x-1 [0] ..... 1.0: favor_enqueue: dev=rl-eth1 verdict=favored src=10.0.0.1 dst=10.0.1.1 sport=1 dport=2 proto=6 qlen=1",
        " x-1 [0] ..... 1.1: favor_enqueue: dev=rl-eth1 verdict=standard src=10.0.0.1 dst=10.0.1.1 sport=1 dport=2 proto=6 qlen=2"]]
    f.write_text(",".join(ft.COLUMNS) + "\n" + "".join(",".join(r) + "\n" for r in rows) + "# lost_events=0\n")
    counts = read_favor_trace(str(f))
    assert counts[("10.0.0.1", "10.0.1.1", 1, 2)] == {"favored": 1, "standard": 1}


def test_a_raw_trace_reads_as_its_csv_does(tmp_path):
    """The runner records the trace unparsed (--raw); the analysis reads it, and --csv converts it, to the same
    rows as a trace recorded as CSV, the lost_events line kept."""
    from analysis.tables.favor import read_favor_trace
    ft = load_tracer()
    lines = [" x-1 [0] ..... 1.0: favor_enqueue: dev=rl-eth1 verdict=favored src=10.0.0.1 dst=10.0.1.1 sport=1 dport=2 proto=6 qlen=1",
             " x-1 [0] ..... 1.1: favor_enqueue: dev=rl-eth1 verdict=pushout_victim src=10.0.0.3 dst=10.0.1.1 sport=5 dport=2 proto=6 qlen=2",
             " x-1 [0] ..... 1.1: favor_enqueue: dev=rl-eth1 verdict=favored src=10.0.0.1 dst=10.0.1.1 sport=1 dport=2 proto=6 qlen=2"]
    raw = tmp_path / "favor-trace.txt"
    raw.write_text(f"{ft.RAW_HEADER}1000.5\n" + "\n".join(lines) + "\n# lost_events=3\n")
    rows = list(ft.read_raw(raw))
    assert rows == [ft.parse(l, 1000.5) for l in lines] and rows[0][0] == "1001.500000"
    subprocess.run([sys.executable, str(QDISC / "tools" / "favor_trace.py"), "--csv", str(raw), "--out",
                    str(tmp_path / "favor-trace.csv")], check=True)
    text = (tmp_path / "favor-trace.csv").read_text()
    assert text.splitlines()[0] == ",".join(ft.COLUMNS) and text.endswith("# lost_events=3\n")
    assert read_favor_trace(str(raw)) == read_favor_trace(str(tmp_path / "favor-trace.csv"))
    assert read_favor_trace(str(raw))[("10.0.0.1", "10.0.1.1", 1, 2)] == {"favored": 2}
    raw.write_text("t,dev\n")
    with pytest.raises(ValueError, match="not a raw favor trace"):
        list(ft.read_raw(raw))


def test_trace_recorder_turns_task_names_off_and_says_how_to_restore(tmp_path):
    """record-cmd on: turned off, and its file returned for the restore; off or absent: left alone."""
    ft = load_tracer()
    (tmp_path / "options").mkdir()
    opt = tmp_path / "options" / "record-cmd"
    opt.write_text("1\n")
    assert ft.record_cmd_off(tmp_path) == opt and opt.read_text() == "0"
    assert ft.record_cmd_off(tmp_path) is None and opt.read_text() == "0"   # already off: not ours to restore
    opt.unlink()
    assert ft.record_cmd_off(tmp_path) is None and not opt.exists()
