"""Run the components of an acyclic pipeline graph in order, handing values on without `Pipeline.run`'s copies."""

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from haystack import logging, tracing

logger = logging.getLogger(__name__)


def pipeline_stages(pipeline: Any) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """
    The components of a Haystack `Pipeline` (in the order they were added) and its connections as
    `(sender.output, receiver.input)` pairs: what `run_stages` takes.
    """
    stages = {name: pipeline.get_component(name) for name in pipeline.graph.nodes}
    connections = [
        (f"{sender}.{data['from_socket'].name}", f"{receiver}.{data['to_socket'].name}")
        for sender, receiver, data in pipeline.graph.edges(data=True)
    ]
    return stages, connections


def stage_order(stages: Iterable[str], connections: Iterable[tuple[str, str]]) -> list[str]:
    """
    A topological order of `stages` along `connections` (ties in the order `stages` lists them).

    :raises ValueError: The connections form a cycle (a loop needs `Pipeline.run`).
    """
    names = list(stages)
    senders: dict[str, set[str]] = {name: set() for name in names}
    for sender, receiver in connections:
        source, target = sender.split(".", 1)[0], receiver.split(".", 1)[0]
        if source in senders and target in senders:
            senders[target].add(source)
    order: list[str] = []
    placed: set[str] = set()
    while len(order) < len(names):
        ready = next((name for name in names if name not in placed and senders[name] <= placed), None)
        if ready is None:
            raise ValueError(f"the stages form a cycle: {sorted(set(names) - placed)}; run them with Pipeline.run")
        order.append(ready)
        placed.add(ready)
    return order


def run_stages(
    stages: Mapping[str, Any],
    inputs: Mapping[str, Mapping[str, Any]],
    connections: Iterable[tuple[str, str]],
    *,
    traced: bool = False,
) -> dict[str, dict[str, Any]]:
    """
    Run the stages of an acyclic graph in topological order, each fed its own inputs and its senders' outputs.

    `Pipeline.run` deep-copies every value passed along an edge, element by element: for a 768-float query vector,
    or thousands of chunks with their sparse and dense vectors, that copy costs more than the work of the stage
    that receives them. Here each value is handed on as it is, which is safe for stages that do not modify their
    inputs (lexhay's do not; they build new documents).

    As in `Pipeline.run`: a variadic input (`DocumentJoiner.documents`) gets the list of what its senders produced;
    a stage runs when every mandatory input has a value, and is skipped otherwise (a router's branch that was not
    taken); optional inputs keep their defaults.

    :param stages: Stage name -> component (a None stage is skipped, with the connections into it).
    :param inputs: Stage name -> its run arguments (connections add their senders' outputs).
    :param connections: `(sender.output, receiver.input)` pairs; they must not form a cycle.
    :param traced: Open Haystack tracing spans as `Pipeline.run` does (a `haystack.pipeline.run` span around one
        `haystack.component.run` span per stage, with the component's name, type, inputs and outputs), so the
        installed tracers (lexhay's request traces, OpenTelemetry) see every stage.
    :returns: Stage name -> its outputs (stages that ran only).
    :raises ValueError: The connections form a cycle.
    """
    present = {name: stage for name, stage in stages.items() if stage is not None}
    connections = list(connections)
    outputs: dict[str, dict[str, Any]] = {}
    with tracing.tracer.trace("haystack.pipeline.run") if traced else contextlib.nullcontext():
        for name in stage_order(present, connections):
            stage = present[name]
            sockets = getattr(stage, "__haystack_input__", None)
            sockets = sockets._sockets_dict if sockets is not None else {}
            arguments = {  # a value given for a variadic input is one of its values, as in `Pipeline.run`
                socket: [value] if socket in sockets and sockets[socket].is_variadic else value
                for socket, value in inputs.get(name, {}).items()
            }
            for sender, receiver in connections:
                source, output = sender.split(".", 1)
                target, socket = receiver.split(".", 1)
                if target != name or source not in outputs or output not in outputs[source]:
                    continue
                value = outputs[source][output]
                if socket in sockets and sockets[socket].is_variadic:
                    arguments.setdefault(socket, []).append(value)
                else:
                    arguments[socket] = value
            missing = [s for s, spec in sockets.items() if spec.is_mandatory and s not in arguments]
            if missing:
                logger.debug("Stage {name} skipped: no value for {missing}", name=name, missing=missing)
                continue
            if not traced:
                outputs[name] = stage.run(**arguments)
                continue
            tags = {"haystack.component.name": name, "haystack.component.type": type(stage).__name__}
            with tracing.tracer.trace("haystack.component.run", tags=tags) as span:
                span.set_content_tag("haystack.component.input", arguments)
                outputs[name] = stage.run(**arguments)
                span.set_tag("haystack.component.visits", 1)
                span.set_content_tag("haystack.component.output", outputs[name])
    return outputs
