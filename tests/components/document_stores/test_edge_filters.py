import pytest
from haystack.errors import FilterError
from qdrant_edge import FieldCondition, Filter, HasIdCondition, IsEmptyCondition

from components.document_stores.edge_converters import point_id
from components.document_stores.edge_filters import convert_filters

ET = {"field": "meta.law_id", "operator": "==", "value": "BOE-A-2015-11430"}


def test_empty_and_prebuilt_filters_pass_through():
    assert convert_filters(None) is None
    assert convert_filters({}) is None
    prebuilt = Filter(must=[])
    assert convert_filters(prebuilt) is prebuilt


def test_a_comparison_becomes_one_must_condition():
    converted = convert_filters(ET)
    assert isinstance(converted, Filter)
    assert len(converted.must) == 1 and isinstance(converted.must[0], FieldCondition)
    assert converted.must[0].key == "meta.law_id"


def test_logical_operators_nest_as_qdrant_clauses():
    both = convert_filters({"operator": "AND", "conditions": [ET, {"field": "meta.rank", "operator": "<=", "value": 2}]})
    assert len(both.must) == 2
    either = convert_filters({"operator": "OR", "conditions": [ET, ET]})
    assert len(either.should) == 2
    # Haystack's NOT negates the conjunction of its conditions
    negated = convert_filters({"operator": "NOT", "conditions": [ET, ET]})
    assert len(negated.must_not) == 1 and len(negated.must_not[0].must) == 2


def test_ids_filter_through_the_point_ids_and_none_matches_an_empty_field():
    by_id = convert_filters({"field": "id", "operator": "in", "value": ["a", "b"]})
    assert isinstance(by_id.must[0], HasIdCondition)
    assert {str(value) for value in by_id.must[0].point_ids} == {point_id("a"), point_id("b")}
    missing = convert_filters({"field": "meta.repeal_date", "operator": "==", "value": None})
    assert isinstance(missing.must[0], IsEmptyCondition)
    assert convert_filters({"field": "meta.status", "operator": "!=", "value": "repealed"}).must_not


@pytest.mark.parametrize(
    "filters",
    [
        "meta.law_id == ET",
        {"field": "meta.law_id", "value": "x"},
        {"operator": "AND", "conditions": []},
        {"field": "meta.law_id", "operator": "~", "value": "x"},
        {"field": "meta.law_id", "operator": "in", "value": "not a list"},
        {"field": "id", "operator": ">", "value": "a"},
        {"field": "meta.publication_date", "operator": ">", "value": "yesterday"},
        {"field": "meta.tags", "operator": "==", "value": {"a": 1}},
    ],
)
def test_invalid_filters_are_a_filter_error(filters):
    with pytest.raises(FilterError):
        convert_filters(filters)
