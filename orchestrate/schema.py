"""The config schema (config/schema/config.schema.yaml): read once, its validator, and the defaults it holds.

Every config key's default is a `default:` in the schema and nowhere else. fill_defaults puts them into a
config's top level (sections inherit from there, so a section gets only what it gives itself); defaults()
is what an empty config is filled with, for code that needs one default (an AQM's MTU, a fix's example).
"""
from __future__ import annotations

import copy
import functools
from pathlib import Path

import jsonschema
import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "config" / "schema" / "config.schema.yaml"


@functools.lru_cache(maxsize=1)
def _schema() -> dict:
    with open(SCHEMA_PATH) as f:
        return yaml.safe_load(f)


def schema() -> dict:
    """The schema, a copy a caller may change."""
    return copy.deepcopy(_schema())


# JSON Schema counts 8.0 as an integer; the runner and tc do not (limit 8.0, snaplen 128.0), so a key the
# schema calls integer takes whole numbers written as such
Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool)))


def _set_defaults(validator, properties, instance, schema):
    # jsonschema's documented way to fill defaults ("Why doesn't my schema's default property set the
    # default on my instance?" in its FAQ): extend the `properties` keyword so that a missing property
    # takes its default, then descend as usual, which fills the defaults of the objects inside it.
    # snakemake.utils.validate(set_default=True) does the same but with its own validator, which would lose
    # the integer rule above.
    if isinstance(instance, dict):
        for name, sub in properties.items():
            if "default" in sub and name not in instance:
                instance[name] = copy.deepcopy(sub["default"])
    yield from jsonschema.Draft202012Validator.VALIDATORS["properties"](validator, properties, instance, schema)


_Filling = jsonschema.validators.extend(Validator, {"properties": _set_defaults})


def fill_defaults(config: dict) -> dict:
    """The config (valid against the schema) with the schema's defaults filled into its top level and the
    objects under it, in place. Sections are left as given: a section's missing key means the config's
    value, not the default."""
    top = {k: v for k, v in config.items() if k != "sections"}
    for _ in _Filling(_schema()).iter_errors(top):
        pass                    # validate has refused an invalid config before; errors here mean nothing new
    config.update(top)
    return config


@functools.lru_cache(maxsize=1)
def _defaults() -> dict:
    return fill_defaults({})


def defaults() -> dict:
    """What an empty config is filled with: every default of the schema, in a copy."""
    return copy.deepcopy(_defaults())


def defaults_of(definition: str) -> dict:
    """The defaults of one object of the schema's $defs (persistent, reference, ...): what an empty one is
    filled with."""
    out = {}
    for _ in _Filling({"$defs": _schema()["$defs"], "$ref": f"#/$defs/{definition}"}).iter_errors(out):
        pass
    return out
