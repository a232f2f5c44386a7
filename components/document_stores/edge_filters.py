"""
Haystack metadata filters to Qdrant Edge filters, for `EdgeDocumentStore`.

Fields are payload paths as on a Qdrant server (`meta.law_id`); `id` filters by Document id through the point ids.
Every operator of Haystack's filter syntax is supported (AND, OR, NOT, ==, !=, >, >=, <, <=, in, not in); dates
compare as ISO 8601 strings, which a `datetime` payload index serves.
"""

from datetime import date, datetime
from typing import Any

import numpy as np
from haystack.errors import FilterError
from qdrant_edge import (
    FieldCondition,
    Filter,
    HasIdCondition,
    IsEmptyCondition,
    MatchAny,
    MatchValue,
    RangeDateTime,
    RangeFloat,
)

from components.document_stores.edge_converters import point_id

_LOGICAL_OPERATORS = ("AND", "OR", "NOT")
_RANGE_OPERATORS = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}
_FILTER_DOCS = "See https://docs.haystack.deepset.ai/docs/metadata-filtering for the filter syntax."


def convert_filters(filters: dict[str, Any] | Filter | None) -> Filter | None:
    """
    Converts Haystack filters to a Qdrant Edge `Filter`; a `Filter` passes through unchanged.

    Usage example:
    ```python
    from components.document_stores.edge_filters import convert_filters

    in_force_et = convert_filters({"operator": "AND", "conditions": [
        {"field": "meta.law_id", "operator": "==", "value": "BOE-A-2015-11430"},
        {"field": "meta.status", "operator": "!=", "value": "repealed"},
    ]})
    ```

    :raises FilterError: If the filters are invalid.
    """
    if filters is None or isinstance(filters, Filter):
        return filters
    if not isinstance(filters, dict):
        raise FilterError(f"Filters must be a dictionary, got {type(filters).__name__}. {_FILTER_DOCS}")
    if not filters:
        return None
    condition = _convert_condition(filters)
    return condition if isinstance(condition, Filter) else Filter(must=[condition])


def _convert_condition(condition: Any) -> Any:
    if not isinstance(condition, dict):
        raise FilterError(f"A filter condition must be a dictionary, got {condition!r}. {_FILTER_DOCS}")
    if "operator" not in condition:
        raise FilterError(f"Filter condition {condition!r} has no 'operator'. {_FILTER_DOCS}")
    operator = condition["operator"]
    if operator in _LOGICAL_OPERATORS:
        return _convert_logical(operator, condition)
    if "field" not in condition or "value" not in condition:
        raise FilterError(f"Comparison filter {condition!r} needs 'field', 'operator' and 'value'. {_FILTER_DOCS}")
    field, value = condition["field"], condition["value"]
    if not isinstance(field, str) or not field:
        raise FilterError(f"Filter field must be a non-empty string, got {field!r}.")
    if field == "id":
        return _convert_id_comparison(operator, value)
    if operator == "==":
        return _equals(field, value)
    if operator == "!=":
        return Filter(must_not=[_equals(field, value)])
    if operator == "in":
        return _is_in(field, _list_value(operator, value))
    if operator == "not in":
        return Filter(must_not=[_is_in(field, _list_value(operator, value))])
    if operator in _RANGE_OPERATORS:
        return _range(field, _RANGE_OPERATORS[operator], value)
    raise FilterError(
        f"Unknown filter operator {operator!r}. Use one of AND, OR, NOT, ==, !=, >, >=, <, <=, in, not in. "
        f"{_FILTER_DOCS}"
    )


def _convert_logical(operator: str, condition: dict[str, Any]) -> Filter:
    conditions = condition.get("conditions")
    if not isinstance(conditions, list) or not conditions:
        raise FilterError(f"Logical filter '{operator}' needs a non-empty list of 'conditions'. {_FILTER_DOCS}")
    converted = [_convert_condition(item) for item in conditions]
    if operator == "AND":
        return Filter(must=converted)
    if operator == "OR":
        return Filter(should=converted)
    # Haystack's NOT negates the conjunction of its conditions.
    return Filter(must_not=[Filter(must=converted)])


def _convert_id_comparison(operator: str, value: Any) -> Any:
    if operator in ("==", "!="):
        if not isinstance(value, str):
            raise FilterError(f"Filter on 'id' with '{operator}' needs a string value, got {value!r}.")
        ids = [value]
    elif operator in ("in", "not in"):
        ids = _list_value(operator, value)
        if any(not isinstance(item, str) for item in ids):
            raise FilterError(f"Filter on 'id' with '{operator}' needs a list of strings, got {value!r}.")
    else:
        raise FilterError(f"Filter on 'id' supports ==, !=, in and not in, not {operator!r}.")
    has_id = HasIdCondition({point_id(doc_id) for doc_id in ids})
    return has_id if operator in ("==", "in") else Filter(must_not=[has_id])


def _list_value(operator: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise FilterError(f"Filter operator '{operator}' needs a list value, got {type(value).__name__}: {value!r}.")
    return value


def _equals(field: str, value: Any) -> Any:
    if value is None:
        return IsEmptyCondition(field)
    if isinstance(value, bool):
        # qdrant_edge reads a Python bool as the integer 0/1 in MatchValue; numpy's bool_ converts to a JSON bool.
        return FieldCondition(field, match=MatchValue(np.bool_(value)))
    if isinstance(value, (str, int)):
        return FieldCondition(field, match=MatchValue(value))
    if isinstance(value, float):
        return FieldCondition(field, range=RangeFloat(gte=value, lte=value))
    if isinstance(value, (datetime, date)):
        return FieldCondition(field, match=MatchValue(value.isoformat()))
    raise FilterError(f"Unsupported value {value!r} for '==' / '!=' on '{field}'; use a str, number, bool or None.")


def _is_in(field: str, values: list[Any]) -> Any:
    if all(isinstance(value, str) for value in values) or all(
        isinstance(value, int) and not isinstance(value, bool) for value in values
    ):
        return FieldCondition(field, match=MatchAny(values))
    return Filter(should=[_equals(field, value) for value in values])


def _range(field: str, bound: str, value: Any) -> FieldCondition:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return FieldCondition(field, range=RangeFloat(**{bound: float(value)}))
    if isinstance(value, (datetime, date)):
        return FieldCondition(field, range=RangeDateTime(**{bound: value.isoformat()}))
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            parsed = None
        if parsed is not None:
            return FieldCondition(field, range=RangeDateTime(**{bound: parsed.isoformat()}))
    raise FilterError(f"Range filter on '{field}' needs a number or an ISO 8601 date string, got {value!r}.")
