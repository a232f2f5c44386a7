"""Components that hold other components as init params: one way to deserialize and warm them up."""

from typing import Any

from haystack.core.serialization import component_from_dict, import_class_by_name


def nested_init_parameters(data: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """
    A copy of `data` whose `init_parameters` named in `names` are deserialized components (None stays None).

    Nested classes load through Haystack's deserialization allowlist, like any class a pipeline YAML names.
    """
    params = dict(data.get("init_parameters", {}))
    for name in names:
        nested = params.get(name)
        if nested is not None:
            params[name] = component_from_dict(import_class_by_name(nested["type"]), nested, name)
    return {**data, "init_parameters": params}


def warm_up_nested(owner: Any, names: tuple[str, ...]) -> None:
    """Warm up the nested components of `owner` that have a `warm_up` (models, BM25, stores)."""
    for name in names:
        warm_up = getattr(getattr(owner, name, None), "warm_up", None)
        if callable(warm_up):
            warm_up()
