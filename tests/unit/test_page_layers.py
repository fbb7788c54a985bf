"""The page's ES modules import one way: helpers at the bottom, then the session, the API client, the parts
the features are made of, the features, and the entry `app.js` on top.

`LAYERS` is the rule, top first (as import-linter's layers contract is written): a module imports, whether
with the page (`import ... from "./x.js"`) or at its first use (`import("./x.js")`), only modules of its own
layer or of the layers below it; the modules of an independent layer import none of each other. No chain of
imports, in any layer, comes back to where it started. These checks read the files only (no browser).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import pytest

from infra.web_page import WEB_ROOT
from tests.unit.test_page_modules import REGISTER


class Layer(NamedTuple):
    name: str
    modules: frozenset[str]
    independent: bool = False


LAYERS = (
    Layer("entry", frozenset({"app.js"})),
    # What app.js wires together: the list of files, uploads (and resuming those a reload left), passwords.
    Layer("features", frozenset({"list.js", "uploads.js", "resume.js", "password.js"})),
    # What the features are made of: the list's query and state, folders, the selection, the uploads kept for
    # a reload, and the dialogs and tasks loaded at their first use.
    Layer(
        "parts",
        frozenset(
            {
                "query.js",
                "folders.js",
                "selection.js",
                "unfinished.js",
                "download.js",
                "conflict.js",
                "share.js",
                "preview.js",
                "people.js",
            }
        ),
    ),
    Layer("client", frozenset({"api.js"})),
    # Sign-in and tokens, over the sign-in service's calls (Cognito's JSON API, the managed login's OAuth).
    Layer("session", frozenset({"session.js", "cognito.js"})),
    # The configuration, DOM helpers and the page's messages; the ZIP writer.
    Layer("helpers", frozenset({"page.js", "zip.js"}), independent=True),
)

# `import { a } from "./x.js";`, `import "./x.js";`, `export { a } from "./x.js";` (on one line or several).
STATIC = re.compile(r'^\s*(?:import|export)\s+(?:[\w*${}\s,]+?\s+from\s+)?["\']\./([\w.-]+\.js)["\']', re.M)
# `import("./x.js")`: a module loaded at its first use.
LAZY = re.compile(r'\bimport\(\s*["\']\./([\w.-]+\.js)["\']\s*\)')


class Import(NamedTuple):
    importer: str
    imported: str
    lazy: bool

    def __str__(self) -> str:
        how = "at its first use" if self.lazy else "with the page"
        return f"{self.importer} imports {self.imported} ({how})"


def _modules(root: Path) -> dict[str, str]:
    """The page's modules by name, with their source: every script but the service workers they register
    (a service worker is registered, not imported: a script of its own, in no layer)."""
    sources = {path.name: path.read_text(encoding="utf-8") for path in sorted(root.glob("*.js"))}
    workers = {name for source in sources.values() for name in REGISTER.findall(source)}
    return {name: source for name, source in sources.items() if name not in workers}


def imports(root: Path) -> list[Import]:
    """Every import of a page module by another, in file order."""
    found: list[Import] = []
    for importer, source in _modules(root).items():
        found.extend(Import(importer, imported, False) for imported in STATIC.findall(source))
        found.extend(Import(importer, imported, True) for imported in LAZY.findall(source))
    return found


def _layer_of(layers: tuple[Layer, ...]) -> dict[str, int]:
    """Each module's layer, as its index in `layers` (0: the top)."""
    return {module: at for at, layer in enumerate(layers) for module in layer.modules}


def _cycles(edges: list[Import]) -> list[list[str]]:
    """Each import cycle once, as the modules along it from its first module in name order back to it."""
    following: dict[str, list[str]] = {}
    for edge in edges:
        following.setdefault(edge.importer, []).append(edge.imported)
    found: set[tuple[str, ...]] = set()

    def walk(path: list[str]) -> None:
        for module in sorted(set(following.get(path[-1], []))):
            if module == path[0]:
                found.add(tuple(path))
            elif module not in path and module > path[0]:
                walk([*path, module])

    for start in sorted(following):
        walk([start])
    return [[*cycle, cycle[0]] for cycle in sorted(found)]


def problems(root: Path, layers: tuple[Layer, ...] = LAYERS) -> list[str]:
    """What breaks the layering of the page's modules, each in one sentence; empty if nothing."""
    found: list[str] = []
    modules = set(_modules(root))
    layer_of = _layer_of(layers)
    for module in sorted(modules - set(layer_of)):
        found.append(f"{module} is in no layer: name it in one of LAYERS")
    for module in sorted(set(layer_of) - modules):
        found.append(f"LAYERS names {module}, which web/ does not have")
    named = Counter(module for layer in layers for module in layer.modules)
    for module in sorted(module for module, times in named.items() if times > 1):
        found.append(f"LAYERS names {module} in more than one layer")
    edges = [edge for edge in imports(root) if edge.imported in modules]
    for edge in edges:
        if edge.importer not in layer_of or edge.imported not in layer_of:
            continue
        importer, imported = layers[layer_of[edge.importer]], layers[layer_of[edge.imported]]
        if layer_of[edge.imported] < layer_of[edge.importer]:
            found.append(f"{edge} upward: {imported.name} is above {importer.name}")
        elif importer is imported and importer.independent:
            found.append(f"{edge}: the modules of {importer.name} import none of each other")
    for cycle in _cycles(edges):
        found.append(f"the imports go round in a cycle: {' -> '.join(cycle)}")
    return found


def test_the_page_imports_one_way() -> None:
    assert problems(WEB_ROOT) == []
    assert len(imports(WEB_ROOT)) > 10


@pytest.fixture
def page_copy(tmp_path: Path) -> Path:
    for path in WEB_ROOT.glob("*.js"):
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    return tmp_path


def _prepend(path: Path, line: str) -> None:
    path.write_text(line + path.read_text(encoding="utf-8"), encoding="utf-8")


def test_an_upward_import_is_named(page_copy: Path) -> None:
    _prepend(page_copy / "api.js", 'import { loadList } from "./list.js";\n')
    _prepend(page_copy / "page.js", 'const later = () => import("./app.js");\n')
    found = problems(page_copy)
    assert "api.js imports list.js (with the page) upward: features is above client" in found
    assert "page.js imports app.js (at its first use) upward: entry is above helpers" in found


def test_a_cycle_within_a_layer_is_named(page_copy: Path) -> None:
    _prepend(page_copy / "share.js", 'import {\n  previewFile,\n} from "./preview.js";\n')
    assert problems(page_copy) == ["the imports go round in a cycle: preview.js -> share.js -> preview.js"]


def test_an_independent_layer_and_a_module_of_no_layer(page_copy: Path) -> None:
    _prepend(page_copy / "zip.js", 'import { el } from "./page.js";\n')
    (page_copy / "extra.js").write_text("export const extra = 1;\n", encoding="utf-8")
    assert problems(page_copy) == [
        "extra.js is in no layer: name it in one of LAYERS",
        "zip.js imports page.js (with the page): the modules of helpers import none of each other",
    ]


def test_the_service_worker_is_in_no_layer() -> None:
    assert "sw.js" not in _layer_of(LAYERS)
    assert all(edge.importer != "sw.js" for edge in imports(WEB_ROOT))
