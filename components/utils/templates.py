"""Jinja templates of Haystack components compiled once per component instead of on every run."""

import functools
from typing import Any, TypeVar

T = TypeVar("T")

_MARKER = "_lexhay_compiles_once"


def compile_templates_once(component: T) -> T:
    """
    `component` with the templates of its Jinja environment compiled once instead of on every run.

    Haystack's `ChatPromptBuilder`, `PromptBuilder`, `ConditionalRouter` and `OutputAdapter` keep a Jinja
    environment in `_env` and call its `from_string` for every template on every run; Jinja caches `get_template`
    but not `from_string`, so parsing and compiling cost more than rendering. The environment's `from_string` is
    wrapped in a small cache keyed by the template source: the sources are the component's fixed templates (the
    request's values are render variables, never template source), and the environment (sandboxed or not), its
    extensions and the rendered output stay Haystack's. Calls with `globals` or a `template_class` go to the
    original. A component without such an environment is returned unchanged; calling this twice wraps once.

    ### Usage example

    ```python
    from haystack.components.routers import ConditionalRouter
    from components.utils.templates import compile_templates_once

    router = compile_templates_once(ConditionalRouter(routes=[...]))
    ```
    """
    env = getattr(component, "_env", None)
    original = getattr(env, "from_string", None)
    if original is None or getattr(env, _MARKER, False):
        return component
    compile_source = functools.lru_cache(maxsize=32)(original)

    def from_string(source: Any, globals: Any = None, template_class: Any = None) -> Any:  # noqa: A002 - Jinja's
        if isinstance(source, str) and globals is None and template_class is None:
            return compile_source(source)
        return original(source, globals, template_class)

    env.from_string = from_string
    setattr(env, _MARKER, True)
    return component
