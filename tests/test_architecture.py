"""
The import rule of `components/` (ARCHITECTURE.md): a pipeline stage imports the shared vocabulary, never another
stage.

- Shared packages, importable from anywhere: `components.legal` (legal vocabulary: citations, laws, access, ids,
  answer format, terms, topics), `components.utils` (generic helpers: models, BM25, chunking, caches, nesting),
  `components.document_stores` (stores and their read helpers), and `SHARED_MODULES` (the LLM plumbing every LLM
  stage uses: the local llama.cpp generator, generator (de)serialization, `chat_text` / `chat_json`).
- A stage folder (`STAGE_FOLDERS`) holds stage modules (they define a `@component`) and role helpers (no
  component: backends that the stages of that folder plug in, e.g. `rankers.relevance_backends`). A stage module
  imports no module of another stage folder and no other stage module of its own folder; it may import the
  helpers of its own folder. A role helper imports no stage module at all.
- `ALLOWED` lists the few exceptions, each with its reason.

Imports are read with `ast` (function-level imports included, docstring examples not).
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STAGE_FOLDERS = frozenset({
    "converters", "preprocessors", "extractors", "embedders", "retrievers", "rankers", "routers", "query",
    "builders", "generators", "validators", "writers",
})
SHARED_PACKAGES = frozenset({"legal", "utils", "document_stores"})
SHARED_MODULES = frozenset({"components.generators.llm_backends"})
ALLOWED: dict[tuple[str, str], str] = {
    ("components.generators.answer_generator", "components.generators.extractive_answer"):
        "the answer stage nests the extractive answer as its fallback component (init parameter `extractive`)",
    ("components.rankers.relevance_backends", "components.embedders.dense_embedder"):
        "the `embedding` relevance backend runs the dense embedder components on blocks and question",
}


def module_name(path: Path, root: Path) -> str:
    """Dotted name of a source file under `root` ("components/legal/ids.py" -> "components.legal.ids")."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path, prefix: str = "components") -> list[tuple[int, str]]:
    """`(line, module)` for each `prefix.*` module `path` imports; `from pkg import module` counts the module."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == prefix]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != prefix:
                continue
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                is_module = (root / Path(*submodule.split("."))).with_suffix(".py").is_file()
                found.append((node.lineno, submodule if is_module else node.module))
    return list(dict.fromkeys(found))


def defines_component(path: Path) -> bool:
    """Whether the module defines a class decorated with `@component`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(node, ast.ClassDef)
        and any(isinstance(d, ast.Name) and d.id == "component" for d in node.decorator_list)
        for node in ast.walk(tree)
    )


def import_graph(root: Path, prefix: str = "components") -> dict[str, set[str]]:
    """Module -> the `prefix.*` modules it imports (module-level and function-level), for every source file."""
    graph: dict[str, set[str]] = {}
    for path in sorted((root / prefix).rglob("*.py")):
        name = module_name(path, root)
        graph[name] = {module for _, module in imported_modules(path, root, prefix) if module != name}
    return graph


def violations(root: Path) -> list[str]:
    """Every import that breaks the rule, as "module:line imports other (why)"."""
    files = {module_name(p, root): p for p in (root / "components").rglob("*.py")}
    stages = {name for name, path in files.items() if defines_component(path)}
    found = []
    for name, path in sorted(files.items()):
        parts = name.split(".")
        if len(parts) < 3 or parts[1] not in STAGE_FOLDERS:
            continue
        for line, other in imported_modules(path, root):
            other_parts = other.split(".")
            if other == name or other in SHARED_MODULES or (name, other) in ALLOWED:
                continue
            if len(other_parts) < 2 or other_parts[1] not in STAGE_FOLDERS:
                continue  # the shared packages (legal, utils, document_stores)
            if other_parts[1] != parts[1]:
                why = f"a module of another stage folder ({other_parts[1]})"
            elif other in stages and name in stages:
                why = "another stage module of the same folder"
            elif other in stages:
                why = "a role helper imports no stage module"
            else:
                continue  # a role helper of the same folder
            found.append(f"{name}:{line} imports {other} ({why})")
    return found


def longest_chain(graph: dict[str, set[str]]) -> list[str]:
    """The longest chain of imports without repeats (a module importing a module importing ...)."""
    best: list[str] = []
    memo: dict[str, list[str]] = {}

    def walk(node: str, path: list[str]) -> list[str]:
        if node in memo and not set(memo[node]) & set(path):
            return memo[node]
        longest = [node]
        for other in sorted(graph.get(node, ())):
            if other in path or other not in graph:
                continue
            chain = [node, *walk(other, [*path, node])]
            if len(chain) > len(longest):
                longest = chain
        memo[node] = longest
        return longest

    for start in sorted(graph):
        chain = walk(start, [])
        if len(chain) > len(best):
            best = chain
    return best


def test_stage_modules_import_only_the_shared_vocabulary():
    assert violations(ROOT) == []


def test_allowed_exceptions_still_exist():
    graph = import_graph(ROOT)
    stale = [edge for edge in ALLOWED if edge[0] in graph and edge[1] not in graph[edge[0]]]
    assert stale == [], "an allowed exception is gone: remove it from ALLOWED"


def _write(root: Path, name: str, source: str) -> None:
    path = root / Path(*name.split(".")).with_suffix(".py")
    path.parent.mkdir(parents=True, exist_ok=True)
    for parent in [path.parent, *path.parent.parents]:
        if parent == root:
            break
        (parent / "__init__.py").touch()
    path.write_text(source, encoding="utf-8")


STAGE = "from haystack import component\n\n@component\nclass {name}:\n    pass\n"


def test_checker_flags_sideways_imports_and_accepts_the_vocabulary(tmp_path):
    _write(tmp_path, "components.legal.ids", "PARENT = 'parent'\n")
    _write(tmp_path, "components.retrievers.fetcher", STAGE.format(name="Fetcher"))
    _write(tmp_path, "components.retrievers.scoring", "def score():\n    return 1\n")  # a role helper
    _write(tmp_path, "components.retrievers.expander",
           "from components.legal.ids import PARENT\nfrom components.retrievers.scoring import score\n"
           "from components.generators.llm_backends import chat_text\n" + STAGE.format(name="Expander"))
    assert violations(tmp_path) == []

    _write(tmp_path, "components.builders.prompt",
           'def build():\n    """from components.retrievers.fetcher import Fetcher (a docstring: ignored)"""\n'
           "    from components.retrievers.fetcher import Fetcher\n" + STAGE.format(name="Prompt"))
    _write(tmp_path, "components.retrievers.merger",
           "from components.retrievers import fetcher\n" + STAGE.format(name="Merger"))
    _write(tmp_path, "components.retrievers.scoring", "from components.retrievers.expander import Expander\n")
    assert violations(tmp_path) == [
        "components.builders.prompt:3 imports components.retrievers.fetcher (a module of another stage folder "
        "(retrievers))",
        "components.retrievers.merger:1 imports components.retrievers.fetcher (another stage module of the same "
        "folder)",
        "components.retrievers.scoring:1 imports components.retrievers.expander (a role helper imports no stage "
        "module)",
    ]


def test_longest_chain_follows_imports_without_looping():
    graph = {"a": {"b"}, "b": {"c", "a"}, "c": {"d"}, "d": set(), "e": {"a"}}
    assert longest_chain(graph) == ["e", "a", "b", "c", "d"]


@pytest.mark.parametrize("folder", sorted(STAGE_FOLDERS | SHARED_PACKAGES))
def test_layout_folders_exist(folder):
    assert (ROOT / "components" / folder / "__init__.py").is_file()
