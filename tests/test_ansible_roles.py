"""The Ansible roles as a user of Galaxy-style roles expects them: each has meta/main.yml with galaxy_info
(its name, what it does, the platforms it is provisioned on) and its dependencies, and ansible-lint holds
them to a profile stricter than "basic" (tests/test_lint.py runs the lint itself)."""
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
ROLES = sorted(p for p in (REPO / "ansible" / "roles").iterdir() if (p / "tasks" / "main.yml").exists())
# ansible-lint's profiles from the loosest to the strictest (its documentation, "Profiles")
PROFILES = ["min", "basic", "moderate", "safety", "shared", "production"]


def test_the_roles_are_found():
    assert {"testbed_base", "favorlab_code", "favorlab_qdiscs", "p4_toolchain"} <= {r.name for r in ROLES}


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.name)
def test_each_role_has_galaxy_meta(role):
    meta = yaml.safe_load((role / "meta" / "main.yml").read_text())
    info = meta["galaxy_info"]
    assert info["role_name"] == role.name
    assert info["description"] and info["author"] and info["min_ansible_version"]
    assert {p["name"] for p in info["platforms"]} >= {"Debian", "Ubuntu"}
    # clean.yml includes each role's tasks_from clean: a dependency would be provisioned during a clean
    assert meta["dependencies"] == []


def test_the_lint_profile_is_stricter_than_basic():
    profile = yaml.safe_load((REPO / ".ansible-lint").read_text())["profile"]
    assert PROFILES.index(profile) > PROFILES.index("basic"), profile
