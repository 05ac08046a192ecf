"""Element id values across Revit versions: ElementId.Value (2024+, Int64) or IntegerValue (up to 2025)."""


def element_id_value(element_id):
    value = getattr(element_id, "Value", None)
    if value is None:
        value = element_id.IntegerValue
    return int(value)


def element_id_values(element_ids):
    return [element_id_value(element_id) for element_id in element_ids]
