"""The scenario's JSON Schema agrees with what Scenario accepts, over random values (Hypothesis), and the REST
API serves it."""

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_hwsim import HwsimError, Scenario
from jupyter_hwsim.core.scenario import FIELDS, json_schema

pytest_plugins = ("pytest_jupyter.jupyter_server",)


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"jupyter_hwsim": True}}}


SCHEMA = json_schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def _accepted(d: dict) -> bool:
    try:
        Scenario.from_dict(d)
    except HwsimError:
        return False
    return True


def test_the_schema_is_valid_and_names_every_field():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert list(SCHEMA["properties"]) == list(FIELDS)
    assert SCHEMA["properties"]["storage_bandwidth_gbs"]["title"] == "Storage read speed (GB/s)"
    assert VALIDATOR.is_valid(Scenario().to_dict())  # a full scenario, as the API writes it


numbers = st.one_of(
    st.integers(-10, 10**7), st.floats(allow_nan=False, allow_infinity=False, min_value=-1e7, max_value=1e7)
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([f for f in FIELDS.values() if f.lo is not None]), numbers)
def test_what_the_scenario_accepts_the_schema_accepts(field, value):
    """The schema holds each field's own rules; Scenario adds rules across fields (a prompt longer than the
    model's context), so it may refuse what the schema allows, never the reverse."""
    if field.type is int and isinstance(value, float):
        value = round(value)
    d = {field.name: value}
    if _accepted(d):
        assert VALIDATOR.is_valid(d), d
    if not VALIDATOR.is_valid(d):
        assert not _accepted(d), d


@pytest.mark.parametrize("field", [f for f in FIELDS.values() if f.lo is not None], ids=lambda f: f.name)
def test_each_bound_is_enforced_by_both(field):
    step = 1 if field.type is int else 1e-6 * max(1.0, abs(field.hi))
    for bad in (field.lo - step, field.hi + 2 * step, *([field.lo] if field.lo_open else [])):
        assert not VALIDATOR.is_valid({field.name: bad}) and not _accepted({field.name: bad}), bad


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([f for f in FIELDS.values() if f.choices]), st.text(max_size=8))
def test_a_choice_outside_the_list_is_refused_by_both(field, value):
    if value.strip().lower() not in field.choices:
        assert not VALIDATOR.is_valid({field.name: value}) and not _accepted({field.name: value})


def test_unknown_fields_and_wrong_types_are_refused_by_both():
    for d in ({"gpus": "a100"}, {"pin_memory": "maybe"}, {"loader_workers": "8"}, {"gpu": 3}):
        assert not VALIDATOR.is_valid(d) and not _accepted(d), d


async def test_the_rest_api_serves_the_schema(jp_fetch):
    resp = await jp_fetch("hwsim", "api", "schema")
    assert resp.code == 200
    assert json.loads(resp.body) == json.loads(json.dumps(SCHEMA))
