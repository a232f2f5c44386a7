"""Feature flags: one set per deployment (env + config file), overridable per request."""

from typing import Any

# flag -> default. Defaults follow the measurements in the README (a stage that did not help is off).
DEFAULT_FLAGS: dict[str, bool] = {
    "lexical_first_gating": True,  # a strongly cited article is fetched directly, expansion skipped
    "multiquery": True,  # DecomposeQuery: the question as written (+ one per compared concept); LLM for follow-ups
    "hyde": False,  # a hypothetical passage embedded on the dense side
    "topic_filter": False,  # restrict retrieval to the resolved topic
    "crag": True,  # CRAG grading: RETRY loop / REJECT
    "scope_check": True,  # ScopeChecker: a question about a branch of law the corpus lacks is told so
    "rerank": True,  # LegalReranker
    "chunk_expansion": False,  # reference + sibling expansion of the retrieved blocks
    "graph_enrich": False,  # 2-hop legal graph summary in the context
    "compression": True,  # ContextCompressor: context within the token budget
    "need_retry": True,  # one NEED retry when the answer asks for an article it lacks
    "tracing": True,  # per-stage trace in the answer and the JSONL trace file
}
# per-request options that are not `use_<flag>`: name -> (flag, value it sets)
ALIASES: dict[str, tuple[str, bool]] = {"force_vector": ("lexical_first_gating", False)}
TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off"}


def _bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise ValueError(f"Flag {name!r} needs a boolean (1/0, true/false, on/off), got {value!r}")


def check_flags(values: dict[str, Any] | None) -> dict[str, bool]:
    """Validated flag values (a subset of `DEFAULT_FLAGS`); unknown names are an error listing the known ones."""
    values = values or {}
    if not isinstance(values, dict):
        raise ValueError(f"flags must be a mapping of flag names to booleans, got {values!r}")
    unknown = sorted(set(values) - set(DEFAULT_FLAGS))
    if unknown:
        raise ValueError(f"Unknown flag(s) {unknown}; known: {sorted(DEFAULT_FLAGS)}")
    return {name: _bool(name, value) for name, value in values.items()}


def parse_assignments(items: Any, error: str) -> dict[str, str]:
    """
    `NAME=VALUE` items (blank ones skipped) as a mapping; `error` (with `{item}`) describes a malformed one.

    :raises ValueError: An item without `=` or without a name.
    """
    values: dict[str, str] = {}
    for item in filter(None, (str(i).strip() for i in items)):
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(error.format(item=repr(item)))
        values[name.strip()] = value.strip()
    return values


def lookup_variable(variables: Any, name: str) -> Any:
    """`name` in a mapping of variables whose keys may have been lower-cased (pydantic-settings does)."""
    value = variables.get(name)
    return value if value is not None else variables.get(name.lower())


def flags_from_variables(variables: Any) -> dict[str, Any]:
    """
    The raw flag values set by a mapping of variables: `LEXHAY_FLAGS="hyde=on,rerank=off"` and/or
    `LEXHAY_FLAG_<NAME>=1|0` (the per-flag variables win). `pipelines.settings` reads them from the environment
    and `.env` with this; `check_flags` validates the result.

    :raises ValueError: A malformed `LEXHAY_FLAGS` item.
    """
    values: dict[str, Any] = parse_assignments(
        str(lookup_variable(variables, "LEXHAY_FLAGS") or "").split(","),
        "LEXHAY_FLAGS items look like name=on|off, got {item}",
    )
    for name in DEFAULT_FLAGS:
        value = lookup_variable(variables, f"LEXHAY_FLAG_{name.upper()}")
        if value:
            values[name] = value
    return values


def env_flags(environ: dict[str, str] | None = None) -> dict[str, bool]:
    """
    Validated flags of a mapping of variables (see `flags_from_variables`); without one, the deployment's flags
    as `pipelines.settings` reads them (environment, `.env`, settings file).
    """
    if environ is None:
        from pipelines.settings import current_settings  # noqa: PLC0415 - settings imports this module

        return dict(current_settings().flags)
    return check_flags(flags_from_variables(environ))


def request_flags(base: dict[str, bool], options: dict[str, Any] | None) -> dict[str, bool]:
    """
    The flags of one request: the deployment's `base` with per-request `options` applied.

    Options are `use_<flag>` booleans (`use_hyde`, `use_rerank`, `use_crag`, ...) and `force_vector` (always run
    the vector search, even when a cited article was fetched directly).

    :raises ValueError: An unknown option or a non-boolean value.
    """
    flags = {**DEFAULT_FLAGS, **base}
    if not options:
        return flags
    if not isinstance(options, dict):
        raise ValueError(f"options must be a mapping, got {options!r}")
    known = sorted([f"use_{name}" for name in DEFAULT_FLAGS] + list(ALIASES))
    for key, value in options.items():
        if key in ALIASES:
            flag, set_to = ALIASES[key]
            if _bool(key, value):
                flags[flag] = set_to
        elif key.startswith("use_") and key[4:] in DEFAULT_FLAGS:
            flags[key[4:]] = _bool(key, value)
        else:
            raise ValueError(f"Unknown option {key!r}; known: {known}")
    return flags


# flag -> the query pipeline inputs (`yaml/query.yaml`: component, input) it sets on every run; `tracing` is the
# SDK's own (the request trace), not a pipeline input. tests/pipelines/test_pipelines.py checks each input exists.
FLAG_INPUTS: dict[str, tuple[tuple[str, str], ...]] = {
    "lexical_first_gating": (("gate", "enabled"),),
    "multiquery": (("decompose", "enabled"),),
    "hyde": (("hyde", "enabled"),),
    "topic_filter": (("topic_resolver", "enabled"),),
    "crag": (("crag", "enabled"),),
    "scope_check": (("scope_checker", "enabled"),),
    "rerank": (("retriever", "rerank"),),
    "chunk_expansion": (("ref_expander", "enabled"), ("sibling_expander", "enabled")),
    "graph_enrich": (("graph_enricher", "enabled"),),
    "compression": (("compressor", "enabled"),),
    "need_retry": (("need_router", "use_need"),),
    "tracing": (),
}


def flag_inputs(flags: dict[str, bool]) -> dict[str, dict[str, bool]]:
    """
    The query pipeline run inputs of one request's flags: `{component: {input: value}}` (see `FLAG_INPUTS`).

    :raises ValueError: A flag missing from `flags` (pass `request_flags(...)`, which fills the defaults).
    """
    missing = sorted(set(FLAG_INPUTS) - set(flags))
    if missing:
        raise ValueError(f"flags lacks {missing}; pass request_flags(...)")
    inputs: dict[str, dict[str, bool]] = {}
    for flag, targets in FLAG_INPUTS.items():
        for name, socket in targets:
            inputs.setdefault(name, {})[socket] = bool(flags[flag])
    return inputs
