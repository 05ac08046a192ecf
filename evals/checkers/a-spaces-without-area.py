"""Do any spaces lack a net floor area quantity? Name them, or say none do."""
import ifcopenshell.util.element as ue

from cloud.evaluation import checks


def check(before, after, answer):
    same, why = checks.unchanged(before, after)
    if not same:
        return False, why
    missing = [s.Name for s in before.by_type("IfcSpace")
               if not (ue.get_psets(s).get("Qto_SpaceBaseQuantities") or {}).get("NetFloorArea")]
    if missing:
        ok, absent = checks.mentions_all(answer, missing)
        return ok, "" if ok else f"not named: {', '.join(absent)}"
    named = checks.mentions_none(answer, [s.Name for s in before.by_type("IfcSpace")])
    says_none = bool({"none", "no", "all", "every"} & checks.words(answer))
    if named or not says_none:
        return False, f"every space has one; the answer should say so (names {named})"
    return True, "says that every space has an area"
