"""The corpus automation: one script that renumbers, edits a property set, moves, retypes and deletes, run on
every corpus file through the real keeper. It prints what it did (JSON) so the test can hold the change report
to it. Kept as text: it runs in the script's sandboxed process, not in the test's."""
from __future__ import annotations

RENUMBER_PREFIX = "NX-"
OFF_PATTERN_TAG = "NX-X"  # the one tag the corpus IDS rejects (its pattern is NX-<digits>)
PSET_VALUE = "edited by the corpus test"
MOVE_M = 0.3

EDIT_SCRIPT = f'''
import json
import ifcopenshell.api.geometry
import ifcopenshell.api.pset
import ifcopenshell.api.root
import ifcopenshell.api.type
import ifcopenshell.guid
import ifcopenshell.util.element
import ifcopenshell.util.placement
import ifcopenshell.util.type
import ifcopenshell.util.unit

did = {{"renumbered": {{}}, "pset": None, "moved": None, "retyped": None, "deleted": None}}
elements = sorted((e for e in model.by_type("IfcElement") if not e.is_a("IfcFeatureElement")), key=lambda e: e.id())

# A deletion, chosen first so no other edit takes it: the last element that fills or has no opening, has no
# parts, contains nothing and places nothing relative to itself (small files have few elements: the other edits then share elements).
def stands_alone(element):
    return not (getattr(element, "FillsVoids", ()) or getattr(element, "HasOpenings", ())
                or getattr(element, "IsDecomposedBy", ()) or getattr(element, "ContainsElements", ())
                or getattr(element, "IsNestedBy", ()) or getattr(element, "Nests", ())
                or (element.ObjectPlacement is not None
                    and getattr(element.ObjectPlacement, "ReferencedByPlacements", ())))

reserved = next((e for e in reversed(elements) if stands_alone(e)), None) if len(elements) > 1 else None
used = {{reserved.id()}} if reserved is not None else set()

def candidates():
    """Elements no edit has taken yet first, then the others (never the one to delete)."""
    fresh = [e for e in elements if e.id() not in used]
    taken = [e for e in elements if e.id() in used and e is not reserved]
    return fresh + taken

# Renumbering: the doors (else the first elements), NX-0, NX-1, ...; the last one off the IDS's pattern.
doors = sorted(model.by_type("IfcDoor"), key=lambda d: d.id())[:5] or [e for e in elements if e is not reserved][:2]
for number, element in enumerate(doors):
    tag = "{RENUMBER_PREFIX}%d" % number if number < len(doors) - 1 else "{OFF_PATTERN_TAG}"
    did["renumbered"][element.id()] = [element.Tag, tag]
    element.Tag = tag
    used.add(element.id())

# A property-set edit: the first text property of an element's own property set, else a new set.
for element in candidates():
    psets = ifcopenshell.util.element.get_psets(element, psets_only=True, should_inherit=False)
    found = next(((name, values, key) for name, values in sorted(psets.items()) for key, value in values.items()
                  if key != "id" and isinstance(value, str)), None)
    if found is None:
        continue
    name, values, key = found
    ifcopenshell.api.pset.edit_pset(model, pset=model.by_id(values["id"]), properties={{key: "{PSET_VALUE}"}})
    did["pset"] = [element.id(), f"property:{{name}}.{{key}}", values[key]]
    used.add(element.id())
    break
else:
    element = candidates()[0]
    pset = ifcopenshell.api.pset.add_pset(model, product=element, name="Pset_NexusCheck")
    ifcopenshell.api.pset.edit_pset(model, pset=pset, properties={{"Checked": "{PSET_VALUE}"}})
    did["pset"] = [element.id(), "property:Pset_NexusCheck.Checked", None]
    used.add(element.id())

# A move: the first element placed by an IfcLocalPlacement (else one without a placement), {MOVE_M} m along x.
movable = next((e for e in candidates() if e.ObjectPlacement is not None
                and e.ObjectPlacement.is_a("IfcLocalPlacement")), None) \
    or next(e for e in candidates() if e.ObjectPlacement is None)
matrix = ifcopenshell.util.placement.get_local_placement(movable.ObjectPlacement)
matrix[0][3] += {MOVE_M} / ifcopenshell.util.unit.calculate_unit_scale(model)
ifcopenshell.api.geometry.edit_object_placement(model, product=movable, matrix=matrix, is_si=False)
did["moved"] = movable.id()
used.add(movable.id())

# A type change: a new type object of a kind the element takes, assigned to it. Where IfcOpenShell knows no
# type class for any element (IFC2X3's IfcElectricDistributionPoint), a generic IfcTypeProduct, related directly.
def retype(element):
    old = ifcopenshell.util.element.get_type(element)
    classes = ([old.is_a()] if old else []) + ifcopenshell.util.type.get_applicable_types(element.is_a(), schema=model.schema)
    for type_class in dict.fromkeys(classes):
        new_type = ifcopenshell.api.root.create_entity(model, ifc_class=type_class, name="NX corpus type")
        try:
            ifcopenshell.api.type.assign_type(model, related_objects=[element], relating_type=new_type)
        except TypeError:  # IfcOpenShell's list of type classes offers one its own check refuses
            ifcopenshell.api.root.remove_product(model, product=new_type)
            continue
        return new_type
    return None

for element in candidates():
    new_type = retype(element)
    if new_type is not None:
        break
else:
    element = candidates()[0]
    new_type = ifcopenshell.api.root.create_entity(model, ifc_class="IfcTypeProduct", name="NX corpus type")
    model.createIfcRelDefinesByType(ifcopenshell.guid.new(), element.OwnerHistory, None, None, [element], new_type)
did["retyped"] = [element.id(), new_type.id()]
used.add(element.id())

doomed = reserved
if doomed is not None:
    did["deleted"] = doomed.id()
    ifcopenshell.api.root.remove_product(model, product=doomed)

print(json.dumps(did))
'''

# Renumbered elements (their tag starts NX-) must have a tag NX-<digits>: the script breaks it once, so the
# check reports exactly one introduced failure on every file, whatever IFC version it is.
CORPUS_IDS = f"""<?xml version="1.0" encoding="UTF-8"?>
<ids xmlns="http://standards.buildingsmart.org/IDS" xmlns:xs="http://www.w3.org/2001/XMLSchema"
     xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
     xsi:schemaLocation="http://standards.buildingsmart.org/IDS http://standards.buildingsmart.org/IDS/1.0/ids.xsd">
  <info><title>Corpus renumbering</title></info>
  <specifications>
    <specification name="Renumbered tags" ifcVersion="IFC2X3 IFC4 IFC4X3_ADD2">
      <applicability minOccurs="0" maxOccurs="unbounded">
        <attribute><name><simpleValue>Tag</simpleValue></name>
          <value><xs:restriction base="xs:string"><xs:pattern value="{RENUMBER_PREFIX}.*"/></xs:restriction></value>
        </attribute>
      </applicability>
      <requirements>
        <attribute><name><simpleValue>Tag</simpleValue></name>
          <value><xs:restriction base="xs:string"><xs:pattern value="{RENUMBER_PREFIX}[0-9]+"/></xs:restriction></value>
        </attribute>
      </requirements>
    </specification>
  </specifications>
</ids>
"""
