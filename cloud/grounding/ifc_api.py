"""The IFC host's API index, built from the installed ifcopenshell: api and util functions, schema entities."""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import ifcopenshell
import ifcopenshell.api
import ifcopenshell.util
from ifcopenshell import ifcopenshell_wrapper

from cloud.grounding.index import ApiEntry, ApiIndex

_NAMED_TYPE = re.compile(r"<(?:type|entity|enumeration|select) (\w+)")
# Modules that are tooling rather than API a script would call.
SKIPPED_UTIL = {"ifc4x3dev_scrape_data_for_docs", "generate_pset_templates", "profiler", "doc", "mvd_info"}


def _doc(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.split("\n\n", 1)[0] + ("\n\n" + doc.split("\n\n", 2)[1] if doc.count("\n\n") >= 1 else "")


def _signature(fn: object) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "(...)"


# Some ifcopenshell modules print a note on import when an optional dependency is missing. This index is
# built on a thread, so that is not silenced here: replacing sys.stdout from a thread while another thread
# prints frees the stream the print is using (a segfault). The commands whose stdout is a protocol (`nexus
# run`, `eval --json`, `batch --json`, the stdio MCP server) point descriptor 1 at stderr once, before any
# thread starts (cloud.cli.protocol_stdout; the MCP SDK's stdio transport does the same).
def _api_functions() -> list[ApiEntry]:
    entries = []
    for info in pkgutil.iter_modules(ifcopenshell.api.__path__):
        try:
            module = importlib.import_module(f"ifcopenshell.api.{info.name}")
        except Exception:  # an optional dependency of one api module must not hide the rest
            continue
        entries.append(ApiEntry(module.__name__, "module", "", _doc(module)))
        for name in getattr(module, "__all__", []):
            fn = getattr(module, name, None)
            if callable(fn):
                entries.append(ApiEntry(f"{module.__name__}.{name}", "function", _signature(fn), _doc(fn)))
    return entries


def _util_functions() -> list[ApiEntry]:
    entries = []
    for info in pkgutil.iter_modules(ifcopenshell.util.__path__):
        if info.name in SKIPPED_UTIL:
            continue
        try:
            module = importlib.import_module(f"ifcopenshell.util.{info.name}")
        except Exception:
            continue
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                entries.append(ApiEntry(f"{module.__name__}.{name}", "function", _signature(obj), _doc(obj)))
            elif inspect.isclass(obj):
                entries.append(ApiEntry(f"{module.__name__}.{name}", "class", _signature(obj), _doc(obj)))
    return entries


def _type_name(attribute: object) -> str:
    """`IfcLabel`, `IfcObjectPlacement`, `SET [1:?] OF IfcRepresentation`, ... from the wrapper's repr."""
    text = str(attribute.type_of_attribute())
    named = _NAMED_TYPE.match(text)
    return named.group(1) if named else text.strip("<>")


def _schema_entities(schema_name: str) -> list[ApiEntry]:
    schema = ifcopenshell_wrapper.schema_by_name(schema_name)
    entries = []
    for decl in schema.declarations():
        if isinstance(decl, ifcopenshell_wrapper.entity):
            attributes = ", ".join(f"{a.name()}: {_type_name(a)}" for a in decl.all_attributes())
            supertype = decl.supertype().name() if decl.supertype() else ""
            doc = f"{schema_name} entity" + (f", subtype of {supertype}" if supertype else "") + \
                (" (abstract)" if decl.is_abstract() else "")
            entries.append(ApiEntry(decl.name(), "entity", f"({attributes})", doc))
            for attribute in decl.attributes():  # the ones it declares itself
                entries.append(ApiEntry(f"{decl.name()}.{attribute.name()}", "attribute",
                                        f": {_type_name(attribute)}",
                                        "optional" if attribute.optional() else "required"))
        elif isinstance(decl, ifcopenshell_wrapper.enumeration_type):
            entries.append(ApiEntry(decl.name(), "enum", f"({', '.join(decl.enumeration_items())})",
                                    f"{schema_name} enumeration"))
    return entries


CLASH_SETS_DOC = ("clash_sets: a list of {'name', 'mode': 'intersection' | 'collision' | 'clearance', 'tolerance' "
                  "(intersection), 'clearance' (clearance), 'check_all', 'a': [{'file': KEY}], 'b': [{'file': KEY}]} "
                  "where KEY names a file put in clasher.ifcs (e.g. clasher.ifcs['model'] = model; "
                  "clasher.ifcs['MEP.ifc'] = refs['MEP.ifc']); after clash() each set has 'clashes': "
                  "{key: {'a_global_id', 'b_global_id', 'p1', 'p2', 'distance', 'type'}}. Set settings.logger "
                  "(a logging.Logger) first. refs.clash(...) does all this and returns findings.")


def _clash_api() -> list[ApiEntry]:
    """IfcOpenShell's ifcclash (clash detection between the working model and its references)."""
    try:
        from ifcclash import ifcclash
    except Exception:  # not installed: nothing to index
        return []
    entries = [ApiEntry("ifcclash.ifcclash", "module", "", "Clash detection (IfcOpenShell's ifcclash): hard "
                        "clashes, collisions and clearance between the elements of one or more IFC files. "
                        + CLASH_SETS_DOC)]
    for cls in (ifcclash.Clasher, ifcclash.ClashSettings):
        entries.append(ApiEntry(f"ifcclash.ifcclash.{cls.__name__}", "class", _signature(cls),
                                _doc(cls) or (CLASH_SETS_DOC if cls is ifcclash.Clasher else "")))
        for name, fn in vars(cls).items():
            if not name.startswith("_") and inspect.isfunction(fn):
                entries.append(ApiEntry(f"ifcclash.ifcclash.{cls.__name__}.{name}", "function", _signature(fn),
                                        _doc(fn)))
    return entries


def build_ifc_index(schema_name: str = "IFC4") -> ApiIndex:
    entries = [*_api_functions(), *_util_functions(), *_clash_api(), *_schema_entities(schema_name)]
    return ApiIndex(entries, f"ifcopenshell {ifcopenshell.version} API and {schema_name} schema")
