"""Make the model pass the IDS (door fire rating, door marks): only the door without a fire rating gets EI30."""
import ifctester.ids

from cloud.evaluation import checks

IDS_TEXT = '<?xml version="1.0" encoding="UTF-8"?>\n<ids xmlns="http://standards.buildingsmart.org/IDS" xmlns:xs="http://www.w3.org/2001/XMLSchema">\n  <info><title>Office doors</title></info>\n  <specifications>\n    <specification name="Door fire rating" ifcVersion="IFC4">\n      <applicability minOccurs="0" maxOccurs="unbounded"><entity><name><simpleValue>IFCDOOR</simpleValue></name></entity></applicability>\n      <requirements><property dataType="IFCLABEL" cardinality="required"><propertySet><simpleValue>Pset_DoorCommon</simpleValue></propertySet><baseName><simpleValue>FireRating</simpleValue></baseName></property></requirements>\n    </specification>\n    <specification name="Door marks" ifcVersion="IFC4">\n      <applicability minOccurs="0" maxOccurs="unbounded"><entity><name><simpleValue>IFCDOOR</simpleValue></name></entity></applicability>\n      <requirements><attribute cardinality="required"><name><simpleValue>Tag</simpleValue></name></attribute></requirements>\n    </specification>\n  </specifications>\n</ids>'
NEW_CLASSES = ("IfcPropertySet", "IfcPropertySingleValue", "IfcRelDefinesByProperties")


def check(before, after, answer):
    spec = ifctester.ids.from_string(IDS_TEXT)
    spec.validate(after)
    failing = [s.name for s in spec.specifications if not s.status]
    if failing:
        return False, f"still failing: {', '.join(failing)}"
    for door in after.by_type("IfcDoor"):
        was = checks.pset_value(before.by_id(door.id()), "Pset_DoorCommon", "FireRating")
        now = checks.pset_value(door, "Pset_DoorCommon", "FireRating")
        if was is None and now != "EI30":
            return False, f"door {door.Tag} has fire rating {now!r}, not EI30"
        if was is not None and now != was:
            return False, f"door {door.Tag} changed from {was!r} to {now!r}"
    return checks.only_changed(before, after, lambda b, a: False, allow_added=lambda e: e.is_a() in NEW_CLASSES)
