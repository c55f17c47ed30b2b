"""The --sizes grammar: a config's sizes written as one word and read back by the generator and the
reference user alike."""
import pytest

from contract.sizes import DEFAULT, format_sizes, parse_sizes

REFERENCE = {"pareto": ("shape", "mean_pkts"), "exponential": ("mean_pkts",)}


@pytest.mark.parametrize("sizes, word", [
    ({"distribution": "pareto", "shape": 1.3, "mean_pkts": 30}, "pareto:shape=1.3,mean_pkts=30"),
    ({"distribution": "bounded_pareto", "shape": 1.3, "mean_pkts": 30, "max_pkts": 10000},
     "bounded_pareto:shape=1.3,mean_pkts=30,max_pkts=10000"),
    ({"distribution": "exponential"}, "exponential"),
])
def test_a_config_sizes_dict_becomes_the_word_and_reads_back(sizes, word):
    assert format_sizes(sizes) == word
    name, params = parse_sizes(word)
    assert name == sizes["distribution"]
    assert all(params[k] == v for k, v in sizes.items() if k != "distribution")


def test_defaults_fill_what_the_word_leaves_out_and_params_come_sorted():
    assert parse_sizes("pareto") == ("pareto", {"mean_pkts": 30, "shape": 1.3})
    # Table 1's sizes: ns-2's Pareto of the second kind, shape 1.3, mean 30 packets (docs/sizes.md)
    assert parse_sizes(DEFAULT) == parse_sizes("lomax") == ("lomax", {"mean_pkts": 30, "shape": 1.3})
    assert list(parse_sizes("bounded_pareto:max_pkts=500")[1]) == ["max_pkts", "mean_pkts", "shape"]
    # min_pkts replaces the default mean
    assert parse_sizes("bounded_pareto:min_pkts=2,max_pkts=500")[1] == {"max_pkts": 500, "min_pkts": 2,
                                                                        "shape": 1.3}


@pytest.mark.parametrize("word, why", [
    ("weibull", "unknown distribution"), ("pareto:shape=1", "shape must be > 1"),
    ("pareto:alpha=2", "bad parameter"), ("pareto:shape", "bad parameter"), ("pareto:shape=x", "not a number"),
    ("exponential:mean_pkts=0", "mean_pkts must be > 0"),
    ("bounded_pareto:mean_pkts=30,min_pkts=2", "not both"), ("bounded_pareto:max_pkts=20", "max_pkts must exceed"),
    ("bounded_pareto:min_pkts=-1,max_pkts=20", "min_pkts must be > 0"),
])
def test_mistakes_are_named_with_the_word(word, why):
    with pytest.raises(ValueError, match=why) as e:
        parse_sizes(word)
    assert repr(word) in str(e.value)


def test_a_reader_that_offers_fewer_distributions_refuses_the_others_and_their_keys():
    assert parse_sizes("pareto:mean_pkts=10", REFERENCE, "the reference user") == parse_sizes("pareto:mean_pkts=10")
    with pytest.raises(ValueError, match="not offered by the reference user"):
        parse_sizes("bounded_pareto:max_pkts=100", REFERENCE, "the reference user")
    with pytest.raises(ValueError, match="bad parameter"):
        parse_sizes("pareto:max_pkts=100", REFERENCE, "the reference user")
    parse_sizes("pareto:max_pkts=100")      # the generator takes (and records) it
