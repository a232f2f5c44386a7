"""
The deepest chain of `components.*` imports (module A imports B, which imports C, ...), and the import-rule
violations (`tests/test_architecture.py`), for a source tree.

```bash
.venv/bin/python benchmarks/import_chain.py              # this checkout
git archive <commit> | tar -x -C /tmp/old && .venv/bin/python benchmarks/import_chain.py --root /tmp/old
```
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.test_architecture import import_graph, longest_chain, violations  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[1]), help="repository root")
    args = parser.parse_args()
    root = Path(args.root)
    graph = import_graph(root)
    chain = longest_chain(graph)
    edges = sum(len(targets) for targets in graph.values())
    print(f"modules: {len(graph)}  import edges between them: {edges}")
    print(f"deepest chain: {len(chain)} modules")
    for depth, module in enumerate(chain):
        print(f"  {'  ' * depth}{module}")
    found = violations(root)
    print(f"sideways imports (rule of tests/test_architecture.py): {len(found)}")
    for line in found:
        print(f"  {line}")


if __name__ == "__main__":
    main()
