"""The images' OCI labels (containers/build passes them to the engine's build): a registry, `docker inspect`
or `podman inspect` shows what an image is and the commit it was built from, with no credential of the
builder's clone in it. Offline: the labels are computed, no engine runs."""
import importlib.machinery
import importlib.util
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _build_module():
    loader = importlib.machinery.SourceFileLoader("containers_build_labels", str(REPO / "containers" / "build"))
    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(mod)
    return mod


cb = _build_module()
KEY = "org.opencontainers.image."


@pytest.mark.parametrize("name", sorted(cb.PARENT))
def test_each_image_names_itself_and_its_commit(name):
    labels = cb.oci_labels(name)
    assert {KEY + k for k in ("title", "description", "revision", "version")} <= set(labels), labels
    assert labels[KEY + "title"] == f"favorlab-{name}"
    assert labels[KEY + "revision"] == cb.favorlab_commit()
    desc = labels[KEY + "description"]
    assert desc.endswith(".") and 40 < len(desc) < 400, desc


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_the_source_is_the_origin_without_the_builders_credentials(tmp_path):
    git(tmp_path, "init", "-q")
    assert cb.oci_source(tmp_path) is None, "no origin: no source label rather than a made-up URL"
    git(tmp_path, "remote", "add", "origin", "https://alice:ghp_secret@github.com/example/favorlab.git")
    assert cb.oci_source(tmp_path) == "https://github.com/example/favorlab.git"
    git(tmp_path, "remote", "set-url", "origin", "git@github.com:example/favorlab.git")
    assert cb.oci_source(tmp_path) == "git@github.com:example/favorlab.git"
