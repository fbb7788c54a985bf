"""The page's ES modules as `web/index.html` loads them: one entry script, every other module preloaded.

The browser learns of a module's imports only once it has the module, so a chain of imports is a chain of
round trips. `<link rel="modulepreload">` for every module lets the document ask for them all at once; the
entry's imports then find them already fetched. These checks read the files only (no browser).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from infra.web_page import CONTENT_TYPES, WEB_ROOT

ENTRY = "app.js"
# A service worker is a script of its own, registered (`navigator.serviceWorker.register("sw.js", ...)`), not
# imported: preloading it would only add it to the first load.
REGISTER = re.compile(r'serviceWorker\.register\(\s*["\']\.?/?([\w.-]+\.js)["\']')
# Static imports: `import { a } from "./x.js";`, `import "./x.js";` (this page writes each on one line).
IMPORT = re.compile(r'^import\s+(?:[^"\']*?\s+from\s+)?["\']([^"\']+)["\'];?\s*$', re.MULTILINE)
# Modules loaded at their first use (`import("./share.js")`), never with the page: not preloaded.
LAZY = re.compile(r'\bimport\(\s*["\']\./([\w.-]+\.js)["\']\s*\)')


class _Loads(HTMLParser):
    """The module scripts and the module preloads of a document."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self.preloads: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "script" and attributes.get("type") == "module" and attributes.get("src"):
            self.scripts.append(str(attributes["src"]))
        if tag == "link" and attributes.get("rel") == "modulepreload" and attributes.get("href"):
            self.preloads.append(str(attributes["href"]))


def _loads(root: Path) -> _Loads:
    parser = _Loads()
    parser.feed((root / "index.html").read_text(encoding="utf-8"))
    return parser


def _scripts(root: Path) -> set[str]:
    return {path.name for path in root.glob("*.js")}


def _workers(root: Path) -> set[str]:
    """The service workers the modules register."""
    return {name for path in root.glob("*.js") for name in REGISTER.findall(path.read_text(encoding="utf-8"))}


def _modules(root: Path) -> set[str]:
    return _scripts(root) - _workers(root)


def _imports(root: Path, module: str) -> list[str]:
    return IMPORT.findall((root / module).read_text(encoding="utf-8"))


def _lazy(root: Path) -> set[str]:
    """The modules some module imports at its first use."""
    return {name for path in root.glob("*.js") for name in LAZY.findall(path.read_text(encoding="utf-8"))}


def _reachable(root: Path, entry: str) -> set[str]:
    """Every module the entry imports, directly or not (relative specifiers in `root` only)."""
    modules = _modules(root)
    seen: set[str] = set()
    pending = [entry]
    while pending:
        module = pending.pop()
        if module in seen or module not in modules:
            continue
        seen.add(module)
        pending.extend(specifier.removeprefix("./") for specifier in _imports(root, module))
        pending.extend(LAZY.findall((root / module).read_text(encoding="utf-8")))
    return seen


def problems(root: Path) -> list[str]:
    """What keeps the page's modules from loading side by side, each in one sentence; empty if nothing."""
    found: list[str] = []
    loads = _loads(root)
    modules = _modules(root)
    if loads.scripts != [ENTRY]:
        found.append(f"index.html's module scripts are {loads.scripts}, not the entry {ENTRY} alone")
    if len(set(loads.preloads)) != len(loads.preloads):
        found.append(f"index.html preloads a module twice: {loads.preloads}")
    lazy = _lazy(root)
    for missing in sorted(modules - {ENTRY} - set(loads.preloads) - lazy):
        found.append(f"{missing} is not preloaded: the browser asks for it only after what imports it")
    for eager in sorted(lazy & set(loads.preloads)):
        found.append(f"index.html preloads {eager}, which is loaded at its first use: not in the first load")
    for gone in sorted(lazy - modules):
        found.append(f"a module loads {gone} at its first use, which web/ does not have")
    for stray in sorted(set(loads.preloads) - modules - _workers(root)):
        found.append(f"index.html preloads {stray}, which web/ does not have")
    for module in sorted(modules):
        for specifier in _imports(root, module):
            name = specifier.removeprefix("./")
            if not specifier.startswith("./") or "/" in name:
                found.append(f"{module} imports {specifier!r}: only the page's own modules, as ./name.js")
            elif name not in modules:
                found.append(f"{module} imports {specifier!r}, which web/ does not have")
    if ENTRY in modules:
        for unused in sorted(modules - _reachable(root, ENTRY)):
            found.append(f"{unused} is in web/ but the entry never imports it")
    for worker in sorted(_workers(root)):
        if worker not in _scripts(root):
            found.append(f"a module registers the service worker {worker}, which web/ does not have")
        elif worker in loads.preloads:
            found.append(f"index.html preloads the service worker {worker}: it is registered when needed")
        elif _imports(root, worker):
            found.append(f"the service worker {worker} imports modules: it is a classic script")
    return found


def test_every_module_of_the_page_is_preloaded_and_imported() -> None:
    assert problems(WEB_ROOT) == []
    assert len(_modules(WEB_ROOT)) > 1
    # The local server (and the content types this names) serves every file of web/.
    assert {path.suffix for path in WEB_ROOT.iterdir()} <= set(CONTENT_TYPES)


@pytest.fixture
def page_copy(tmp_path: Path) -> Path:
    for path in WEB_ROOT.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    return tmp_path


def test_a_module_that_is_not_preloaded_is_found(page_copy: Path) -> None:
    (page_copy / "extra.js").write_text("export const extra = 1;\n", encoding="utf-8")
    entry = page_copy / ENTRY
    source = entry.read_text(encoding="utf-8")
    entry.write_text('import { extra } from "./extra.js";\n' + source, encoding="utf-8")
    assert problems(page_copy) == [
        "extra.js is not preloaded: the browser asks for it only after what imports it"
    ]


def test_a_preload_of_no_module_and_a_module_nothing_imports_are_found(page_copy: Path) -> None:
    index = page_copy / "index.html"
    html = index.read_text(encoding="utf-8")
    index.write_text(
        html.replace("</head>", '  <link rel="modulepreload" href="gone.js">\n</head>'), encoding="utf-8"
    )
    (page_copy / "orphan.js").write_text("export const orphan = 1;\n", encoding="utf-8")
    assert problems(page_copy) == [
        "orphan.js is not preloaded: the browser asks for it only after what imports it",
        "index.html preloads gone.js, which web/ does not have",
        "orphan.js is in web/ but the entry never imports it",
    ]


def test_the_service_worker_is_registered_not_preloaded(page_copy: Path) -> None:
    assert "sw.js" in _workers(WEB_ROOT)
    index = page_copy / "index.html"
    html = index.read_text(encoding="utf-8")
    index.write_text(
        html.replace("</head>", '  <link rel="modulepreload" href="sw.js">\n</head>'), encoding="utf-8"
    )
    assert problems(page_copy) == [
        "index.html preloads the service worker sw.js: it is registered when needed"
    ]


def test_a_service_worker_nothing_registers_is_found(page_copy: Path) -> None:
    for path in page_copy.glob("*.js"):
        path.write_text(REGISTER.sub("serviceWorker.register(missing", path.read_text(encoding="utf-8")))
    assert "sw.js is in web/ but the entry never imports it" in problems(page_copy)


def test_an_import_of_a_library_or_a_missing_module_is_found(page_copy: Path) -> None:
    entry = page_copy / ENTRY
    entry.write_text(
        'import { html } from "htm/preact";\nimport "./missing.js";\n' + entry.read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    assert problems(page_copy) == [
        "app.js imports 'htm/preact': only the page's own modules, as ./name.js",
        "app.js imports './missing.js', which web/ does not have",
    ]


def test_a_module_loaded_at_its_first_use_is_not_preloaded(page_copy: Path) -> None:
    assert {"share.js", "preview.js"} <= _lazy(WEB_ROOT)
    index = page_copy / "index.html"
    html = index.read_text(encoding="utf-8")
    index.write_text(
        html.replace("</head>", '  <link rel="modulepreload" href="share.js">\n</head>'), encoding="utf-8"
    )
    entry = page_copy / ENTRY
    entry.write_text(
        entry.read_text(encoding="utf-8") + 'const later = () => import("./later.js");\n', encoding="utf-8"
    )
    assert problems(page_copy) == [
        "index.html preloads share.js, which is loaded at its first use: not in the first load",
        "a module loads later.js at its first use, which web/ does not have",
    ]
