"""The project's qdiscs come from Kbuild's obj-m line, whatever its layout."""
import pytest

from contract import qdiscs


def test_the_shipped_kbuild_names_favor_first_and_kinds_follow_the_modules():
    assert qdiscs.modules()[0] == "sch_favor"
    assert qdiscs.kinds() == tuple(m.removeprefix("sch_") for m in qdiscs.modules())
    assert len(set(qdiscs.kinds())) == len(qdiscs.kinds()) >= 1


def test_obj_m_lines_are_read_in_order_and_appended(tmp_path):
    k = tmp_path / "Kbuild"
    k.write_text("# comment obj-m := sch_no.o\nobj-m := sch_a.o  sch_b.o\nccflags-y := -I$(src)\nobj-m += sch_c.o\n")
    assert qdiscs.modules(k) == ("sch_a", "sch_b", "sch_c")
    assert qdiscs.kinds(k) == ("a", "b", "c")


@pytest.mark.parametrize("text", ["ccflags-y := -I$(src)\n", "obj-m := favor.o\n", "obj-m := sch_a.c\n"])
def test_a_kbuild_without_sch_modules_is_refused_naming_it(tmp_path, text):
    k = tmp_path / "Kbuild"
    k.write_text(text)
    with pytest.raises(ValueError, match="obj-m"):
        qdiscs.modules(k)
