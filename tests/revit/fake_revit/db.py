"""Fake Autodesk.Revit.DB: a small in-memory Revit document that behaves like the real one where the
NexusAI runtime depends on it.

Modelled behaviour (each is something the runtime must cope with in real Revit):
- Modifying the model needs an open Transaction (ModificationOutsideTransactionException otherwise);
  a second Transaction.Start while one is open throws (scripts must not open their own).
- Commit regenerates: walls joined to a changed wall, the views of its level and the 3D view are
  "modified" too, so modified sets are inflated like Revit's.
- Commit runs failure processing: warnings (overlapping walls, duplicate Mark values) and errors
  (posted failures, e.g. by other add-ins' updaters) go to the transaction's IFailuresPreprocessor;
  ProceedWithRollBack, or errors left unresolved, make Commit() *return* RolledBack without raising.
  Failures left for Revit while forced modal handling is on are recorded as a dialog that would block.
- DocumentChanged fires after a successful commit only, with the net added/modified/deleted ids of
  that transaction and its name; never for a rollback.
- ImageExportOptions + Document.ExportImage write a real PNG whose name Revit suffixes with the view
  type and name; views that cannot be printed (schedules, templates) are refused.
- ElementId has Value on 2024+ and IntegerValue up to 2025, as the real API does.
- TransactionGroup: transactions committed inside it are kept until Assimilate/Commit, or undone by
  RollBack (DocumentChanged then fires with Operation TransactionGroupRolledBack); a group cannot end
  while one of its transactions is open.
- Save, SaveAs, Close, SynchronizeWithCentral, Export and ExportImage raise the Application's
  cancellable pre-event first (DocumentSaving, ..., FileExporting); a cancelled one throws
  OperationCanceledException and does nothing. (Assumed: the API reports a cancelled operation that way.)
- Temporary hide/isolate on a view is changed inside a transaction (undone with it) and narrows what a
  view's collector sees.
Members are named exactly as in the Revit API so tests can check the fake against the 2026 stubs.
"""
from __future__ import annotations

import os
import uuid
from typing import Any

from . import events
from . import exceptions as exc
from .common import EnumValue, NetList, Session, make_enum

# --- enums -------------------------------------------------------------------------------------

TransactionStatus = make_enum("TransactionStatus", {
    "Uninitialized": 0, "Started": 1, "RolledBack": 2, "Committed": 3, "Pending": 4, "Error": 5, "Proceed": 6})
FailureProcessingResult = make_enum("FailureProcessingResult", {
    "Continue": 0, "ProceedWithCommit": 1, "ProceedWithRollBack": 2, "WaitForUserInput": 3})
FailureSeverity = make_enum("FailureSeverity", {"None": 0, "Warning": 1, "Error": 2, "DocumentCorruption": 3})
CategoryType = make_enum("CategoryType", {"Invalid": 0, "Model": 1, "Annotation": 2, "Internal": 3,
                                          "AnalyticalModel": 4})
ViewType = make_enum("ViewType", {"Undefined": 0, "FloorPlan": 1, "CeilingPlan": 2, "Elevation": 3, "ThreeD": 4,
                                  "Schedule": 5, "DrawingSheet": 6, "Legend": 11, "Section": 117})
ExportRange = make_enum("ExportRange", {"VisibleRegionOfCurrentView": 0, "CurrentView": 1, "SetOfViews": 2})
ImageFileType = make_enum("ImageFileType", {"BMP": 0, "JPEGLossy": 1, "JPEGMedium": 2, "JPEGSmallest": 3,
                                            "PNG": 4, "TARGA": 5, "TIFF": 6})
ZoomFitType = make_enum("ZoomFitType", {"FitToPage": 0, "Zoom": 1})
FitDirectionType = make_enum("FitDirectionType", {"Horizontal": 0, "Vertical": 1})
ImageResolution = make_enum("ImageResolution", {"DPI_72": 0, "DPI_150": 1, "DPI_300": 2, "DPI_600": 3})
ImportExportFileFormat = make_enum("ImportExportFileFormat", {"DWG": 1, "DWF": 2, "Image": 8, "IFC": 14, "PDF": 16})
TemporaryViewMode = make_enum("TemporaryViewMode", {
    "RevealHiddenElements": 0, "TemporaryHideIsolate": 1, "WorksharingDisplay": 2, "TemporaryViewProperties": 3})
StorageType = make_enum("StorageType", {"None": 0, "Integer": 1, "Double": 2, "String": 3, "ElementId": 4})
BuiltInCategory = make_enum("BuiltInCategory", {
    "INVALID": -1, "OST_Walls": -2000011, "OST_Doors": -2000023, "OST_Windows": -2000014, "OST_Floors": -2000032,
    "OST_Levels": -2000240, "OST_Views": -2000279, "OST_Rooms": -2000160, "OST_Grids": -2000220,
    "OST_Sheets": -2003100, "OST_DoorTags": -2000460, "OST_Roofs": -2000035, "OST_Ceilings": -2000038,
    "OST_Stairs": -2000120, "OST_Columns": -2000100, "OST_StructuralColumns": -2001330,
    "OST_StructuralFraming": -2001320, "OST_Furniture": -2000080, "OST_GenericModel": -2000151})
BuiltInParameter = make_enum("BuiltInParameter", {
    "INVALID": -1, "ALL_MODEL_MARK": -1001203, "WALL_BASE_CONSTRAINT": -1001107, "FAMILY_LEVEL_PARAM": -1001352,
    "SCHEDULE_LEVEL_PARAM": -1001358, "INSTANCE_REFERENCE_LEVEL_PARAM": -1001364, "ELEM_FAMILY_PARAM": -1002052,
    "ELEM_TYPE_PARAM": -1002051, "ELEM_FAMILY_AND_TYPE_PARAM": -1002052 - 1, "SYMBOL_NAME_PARAM": -1002002,
    "ALL_MODEL_TYPE_NAME": -1002002 - 1, "WALL_USER_HEIGHT_PARAM": -1001300, "CURVE_ELEM_LENGTH": -1004005})

_CATEGORY_TYPES = {
    "OST_Walls": ("Walls", "Model"), "OST_Doors": ("Doors", "Model"), "OST_Windows": ("Windows", "Model"),
    "OST_Floors": ("Floors", "Model"), "OST_Levels": ("Levels", "Annotation"), "OST_Views": ("Views", "Internal"),
    "OST_Rooms": ("Rooms", "Model"), "OST_Grids": ("Grids", "Annotation"), "OST_Sheets": ("Sheets", "Internal"),
    "OST_DoorTags": ("Door Tags", "Annotation")}


def _version() -> int:
    return Session.version


# --- ids, geometry -----------------------------------------------------------------------------

class ElementId:
    """Constructed like Revit's: from an Int64 (Int32 before 2024), a BuiltInCategory or a BuiltInParameter.
    IronPython refuses a bool, a float (even 12.0), a string or another ElementId for these overloads."""

    def __init__(self, value: Any) -> None:
        if isinstance(value, EnumValue):
            value = int(value)
        elif not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"expected Int64, got {type(value).__name__}")
        limit = 2 ** 63 if _version() >= 2024 else 2 ** 31
        if not -limit <= value < limit:
            bits = 64 if _version() >= 2024 else 32
            raise OverflowError(f"Value was either too large or too small for an Int{bits}.")
        self._value = value

    @property
    def Value(self) -> int:
        if _version() < 2024:
            raise AttributeError("'ElementId' object has no attribute 'Value'")
        return self._value

    @property
    def IntegerValue(self) -> int:
        if _version() >= 2026:
            raise AttributeError("'ElementId' object has no attribute 'IntegerValue'")
        return self._value

    def ToString(self) -> str:
        return str(self._value)

    def Equals(self, other: Any) -> bool:
        return isinstance(other, ElementId) and other._value == self._value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ElementId) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return f"<ElementId {self._value}>"


ElementId.InvalidElementId = ElementId(-1)


class XYZ:
    def __init__(self, x: float = 0.0, y: float = 0.0, z: float = 0.0) -> None:
        self.X, self.Y, self.Z = float(x), float(y), float(z)

    def DistanceTo(self, other: XYZ) -> float:
        return ((self.X - other.X) ** 2 + (self.Y - other.Y) ** 2 + (self.Z - other.Z) ** 2) ** 0.5

    def IsAlmostEqualTo(self, other: XYZ) -> bool:
        return self.DistanceTo(other) < 1e-9

    def __add__(self, other: XYZ) -> XYZ:
        return XYZ(self.X + other.X, self.Y + other.Y, self.Z + other.Z)

    def __sub__(self, other: XYZ) -> XYZ:
        return XYZ(self.X - other.X, self.Y - other.Y, self.Z - other.Z)


class Transform:
    """A rigid placement: origin and basis vectors (only what links use)."""

    def __init__(self, origin: XYZ | None = None, basis_x: XYZ | None = None, basis_y: XYZ | None = None,
                 basis_z: XYZ | None = None) -> None:
        self.Origin = origin or XYZ()
        self.BasisX, self.BasisY, self.BasisZ = basis_x or XYZ(1, 0, 0), basis_y or XYZ(0, 1, 0), basis_z or XYZ(0, 0, 1)

    @staticmethod
    def CreateTranslation(vector: XYZ) -> Transform:
        return Transform(XYZ(vector.X, vector.Y, vector.Z))

    def OfPoint(self, point: XYZ) -> XYZ:
        x, y, z, o = self.BasisX, self.BasisY, self.BasisZ, self.Origin
        return XYZ(o.X + point.X * x.X + point.Y * y.X + point.Z * z.X,
                   o.Y + point.X * x.Y + point.Y * y.Y + point.Z * z.Y,
                   o.Z + point.X * x.Z + point.Y * y.Z + point.Z * z.Z)


class UV:
    def __init__(self, u: float = 0.0, v: float = 0.0) -> None:
        self.U, self.V = float(u), float(v)


class BoundingBoxUV:
    def __init__(self, min_u: float = 0.0, min_v: float = 0.0, max_u: float = 0.0, max_v: float = 0.0) -> None:
        self.Min = UV(min_u, min_v)
        self.Max = UV(max_u, max_v)


class Line:
    _SHORT_CURVE_TOLERANCE = 0.00256  # feet, Application.ShortCurveTolerance

    def __init__(self, start: XYZ, end: XYZ) -> None:
        self._start, self._end = start, end

    @staticmethod
    def CreateBound(start: XYZ, end: XYZ) -> Line:
        if start.DistanceTo(end) < Line._SHORT_CURVE_TOLERANCE:
            raise exc.ArgumentsInconsistentException(
                "Curve length is too small for Revit's tolerance (as identified by Application.ShortCurveTolerance).")
        return Line(start, end)

    @property
    def Length(self) -> float:
        return self._start.DistanceTo(self._end)

    def GetEndPoint(self, index: int) -> XYZ:
        return self._start if index == 0 else self._end


class LocationCurve:
    def __init__(self, element: Element, curve: Line) -> None:
        self._element = element
        self._curve = curve

    @property
    def Curve(self) -> Line:
        return self._curve

    @Curve.setter
    def Curve(self, curve: Line) -> None:
        previous = self._curve
        doc = self._element.Document
        doc._modify(self._element, lambda: setattr(self, "_curve", previous), geometry=True)
        self._curve = curve


# --- categories, parameters ----------------------------------------------------------------------

class Category:
    def __init__(self, built_in: EnumValue) -> None:
        name, kind = _CATEGORY_TYPES[str(built_in)]
        self.Name = name
        self.Id = ElementId(int(built_in))
        self.CategoryType = getattr(CategoryType, kind)
        self.BuiltInCategory = built_in

    @staticmethod
    def GetCategory(document: Document, built_in: EnumValue) -> Category:
        return _category(built_in)


_CATEGORIES: dict[str, Category] = {}


def _category(built_in: EnumValue) -> Category:
    key = str(built_in)
    if key not in _CATEGORIES:
        _CATEGORIES[key] = Category(built_in)
    return _CATEGORIES[key]


class Definition:
    def __init__(self, name: str) -> None:
        self.Name = name


class Parameter:
    def __init__(self, element: Element, name: str, storage: EnumValue, value: Any, read_only: bool = False) -> None:
        self._element = element
        self.Definition = Definition(name)
        self.StorageType = storage
        self.IsReadOnly = read_only
        self._value = value

    @property
    def HasValue(self) -> bool:
        return self._value is not None

    def AsString(self) -> str | None:
        return self._value if self.StorageType == StorageType.String else None

    def AsInteger(self) -> int:
        return int(self._value or 0) if self.StorageType == StorageType.Integer else 0

    def AsDouble(self) -> float:
        return float(self._value or 0.0) if self.StorageType == StorageType.Double else 0.0

    def AsElementId(self) -> ElementId:
        return self._value if self.StorageType == StorageType.ElementId else ElementId.InvalidElementId

    def AsValueString(self) -> str | None:
        if self.StorageType == StorageType.ElementId:
            target = self._element.Document.GetElement(self._value)
            return target.Name if target is not None else None
        return None if self._value is None else str(self._value)

    def Set(self, value: Any) -> bool:
        Session.check_api_context("Parameter.Set")
        if self.IsReadOnly:
            raise exc.InvalidOperationException("The parameter is read-only.")
        previous = self._value
        geometric = self.StorageType == StorageType.Double  # lengths and heights regenerate geometry
        self._element.Document._modify(self._element, lambda: setattr(self, "_value", previous), geometric)
        self._value = value
        if self.Definition.Name == "Mark":
            self._element.Document._marks_changed = True
        return True


# --- elements ----------------------------------------------------------------------------------

class Element:
    _built_in_category: EnumValue | None = None

    def __init__(self, document: Document, name: str = "") -> None:
        self._document = document
        self._id = ElementId(document._allocate_id())
        self._name = name
        self._params: dict[str, Parameter] = {}
        self._unique_id = str(uuid.uuid4())

    @property
    def Id(self) -> ElementId:
        return self._id

    @property
    def Document(self) -> Document:
        return self._document

    @property
    def UniqueId(self) -> str:
        return self._unique_id

    @property
    def IsValidObject(self) -> bool:
        return self._id._value in self._document._elements

    @property
    def Category(self) -> Category | None:
        return _category(self._built_in_category) if self._built_in_category is not None else None

    @property
    def Name(self) -> str:
        return self._name

    @Name.setter
    def Name(self, value: str) -> None:
        previous = self._name
        self._document._modify(self, lambda: setattr(self, "_name", previous))
        self._name = value

    @property
    def LevelId(self) -> ElementId:
        return ElementId.InvalidElementId

    def GetTypeId(self) -> ElementId:
        return ElementId.InvalidElementId

    def LookupParameter(self, name: str) -> Parameter | None:
        Session.check_api_context("Element.LookupParameter")
        return self._params.get(name)

    def get_Parameter(self, built_in: EnumValue) -> Parameter | None:
        Session.check_api_context("Element.get_Parameter")
        name = self._built_in_parameter_names().get(str(built_in))
        return self._params.get(name) if name else None

    def _built_in_parameter_names(self) -> dict[str, str]:
        return {"ALL_MODEL_MARK": "Mark"}

    def _dependents(self) -> list[Element]:
        return []


class ElementType(Element):
    _family_name = ""

    @property
    def FamilyName(self) -> str:
        return self._family_name

    def _built_in_parameter_names(self) -> dict[str, str]:
        return {"SYMBOL_NAME_PARAM": "Type Name", "ALL_MODEL_TYPE_NAME": "Type Name"}


class WallType(ElementType):
    _family_name = "Basic Wall"

    def __init__(self, document: Document, name: str, width: float) -> None:
        super().__init__(document, name)
        self.Width = width
        self._params["Type Name"] = Parameter(self, "Type Name", StorageType.String, name, read_only=True)


class Family(Element):
    pass


class FamilySymbol(ElementType):
    def __init__(self, document: Document, family: Family, name: str, built_in: EnumValue) -> None:
        super().__init__(document, name)
        self.Family = family
        self._family_name = family.Name
        self._symbol_category = built_in
        self._params["Type Name"] = Parameter(self, "Type Name", StorageType.String, name, read_only=True)

    @property
    def Category(self) -> Category:
        return _category(self._symbol_category)


class Level(Element):
    _built_in_category = BuiltInCategory.OST_Levels

    def __init__(self, document: Document, name: str, elevation: float) -> None:
        super().__init__(document, name)
        self.Elevation = elevation
        self.ProjectElevation = elevation


class Wall(Element):
    _built_in_category = BuiltInCategory.OST_Walls

    def __init__(self, document: Document, curve: Line, wall_type: WallType, level: Level, height: float) -> None:
        super().__init__(document)
        self._type = wall_type
        self._level_id = level.Id
        self._location = LocationCurve(self, curve)
        self._params["Mark"] = Parameter(self, "Mark", StorageType.String, None)
        self._params["Base Constraint"] = Parameter(self, "Base Constraint", StorageType.ElementId, level.Id)
        self._params["Unconnected Height"] = Parameter(self, "Unconnected Height", StorageType.Double, height)

    @staticmethod
    def Create(document: Document, curve: Line, *args: Any) -> Wall:
        """Create(doc, curve, levelId, structural) or
        Create(doc, curve, wallTypeId, levelId, height, offset, flip, structural)."""
        Session.check_api_context("Wall.Create")
        document._require_transaction()
        if len(args) == 2:
            level_id, wall_type = args[0], document._default_wall_type
        elif len(args) == 6:
            wall_type, level_id = document.GetElement(args[0]), args[1]
        else:
            raise exc.ArgumentException("No overload of Wall.Create takes these arguments.")
        level = document.GetElement(level_id)
        if not isinstance(level, Level):
            raise exc.ArgumentException("levelId is not a level.")
        wall = Wall(document, curve, wall_type, level, 10.0)
        document._add(wall)
        return wall

    @property
    def Name(self) -> str:
        return self._type.Name

    @property
    def WallType(self) -> WallType:
        return self._type

    @property
    def Width(self) -> float:
        return self._type.Width

    @property
    def Location(self) -> LocationCurve:
        return self._location

    @property
    def LevelId(self) -> ElementId:
        return self._level_id

    def GetTypeId(self) -> ElementId:
        return self._type.Id

    def _built_in_parameter_names(self) -> dict[str, str]:
        return {"ALL_MODEL_MARK": "Mark", "WALL_BASE_CONSTRAINT": "Base Constraint",
                "WALL_USER_HEIGHT_PARAM": "Unconnected Height"}

    def _dependents(self) -> list[Element]:
        return [e for e in self._document._elements.values() if isinstance(e, FamilyInstance) and e._host is self]

    def _endpoints(self) -> list[XYZ]:
        curve = self._location.Curve
        return [curve.GetEndPoint(0), curve.GetEndPoint(1)]


class FamilyInstance(Element):
    def __init__(self, document: Document, symbol: FamilySymbol, host: Wall | None, level: Level, mark: str) -> None:
        super().__init__(document)
        self._symbol = symbol
        self._host = host
        self._level_id = level.Id
        self._params["Mark"] = Parameter(self, "Mark", StorageType.String, mark)
        self._params["Level"] = Parameter(self, "Level", StorageType.ElementId, level.Id, read_only=True)

    @property
    def Category(self) -> Category:
        return self._symbol.Category

    @property
    def Name(self) -> str:
        return self._symbol.Name

    @property
    def Symbol(self) -> FamilySymbol:
        return self._symbol

    @property
    def Host(self) -> Wall | None:
        return self._host

    @property
    def LevelId(self) -> ElementId:
        return self._level_id

    def GetTypeId(self) -> ElementId:
        return self._symbol.Id

    def _built_in_parameter_names(self) -> dict[str, str]:
        return {"ALL_MODEL_MARK": "Mark", "FAMILY_LEVEL_PARAM": "Level"}


class View(Element):
    _built_in_category = BuiltInCategory.OST_Views
    _view_type = ViewType.Undefined
    _type_label = "View"

    def __init__(self, document: Document, name: str, outline: tuple[float, float] = (120.0, 80.0),
                 is_template: bool = False) -> None:
        super().__init__(document, name)
        self._outline = outline
        self._is_template = is_template
        self._isolated: frozenset[int] | None = None  # temporary isolate: the ids still shown

    @property
    def ViewType(self) -> EnumValue:
        return self._view_type

    @property
    def IsTemplate(self) -> bool:
        return self._is_template

    @property
    def CanBePrinted(self) -> bool:
        return not self._is_template and self._view_type != ViewType.Schedule

    @property
    def Outline(self) -> BoundingBoxUV:
        width, height = self._outline
        return BoundingBoxUV(0.0, 0.0, width, height)

    @property
    def Title(self) -> str:
        return self._type_label + ": " + self._name

    def CanUseTemporaryVisibilityModes(self) -> bool:
        """Schedules, sheets and templates have no temporary hide/isolate in Revit."""
        return not self._is_template and self._view_type not in (ViewType.Schedule, ViewType.DrawingSheet)

    def IsolateElementsTemporary(self, elementIds: Any) -> None:
        Session.check_api_context("View.IsolateElementsTemporary")
        if not self.CanUseTemporaryVisibilityModes():
            raise exc.InvalidOperationException("The view cannot use temporary view modes.")
        self._set_isolated(frozenset(i._value for i in elementIds))

    def DisableTemporaryViewMode(self, mode: EnumValue) -> None:
        Session.check_api_context("View.DisableTemporaryViewMode")
        if mode == TemporaryViewMode.TemporaryHideIsolate and self._isolated is not None:
            self._set_isolated(None)

    def IsTemporaryHideIsolateActive(self) -> bool:
        return self._isolated is not None

    def IsInTemporaryViewMode(self, mode: EnumValue) -> bool:
        return mode == TemporaryViewMode.TemporaryHideIsolate and self._isolated is not None

    def _set_isolated(self, ids: frozenset[int] | None) -> None:
        previous = self._isolated
        self._document._modify(self, lambda: setattr(self, "_isolated", previous))
        self._isolated = ids

    def _visible(self, element: Element) -> bool:
        return self._shows(element) and (self._isolated is None or element.Id._value in self._isolated)

    def _shows(self, element: Element) -> bool:
        return False


class ViewPlan(View):
    _view_type = ViewType.FloorPlan
    _type_label = "Floor Plan"

    def __init__(self, document: Document, name: str, level: Level, **kwargs: Any) -> None:
        super().__init__(document, name, **kwargs)
        self._level = level

    @property
    def GenLevel(self) -> Level:
        return self._level

    def _shows(self, element: Element) -> bool:
        category = element.Category
        return (category is not None and category.CategoryType == CategoryType.Model
                and element.LevelId == self._level.Id)


class View3D(View):
    _view_type = ViewType.ThreeD
    _type_label = "3D View"

    @property
    def IsPerspective(self) -> bool:
        return False

    def _shows(self, element: Element) -> bool:
        category = element.Category
        return category is not None and category.CategoryType == CategoryType.Model


class ViewSchedule(View):
    """A schedule of one category: a collector on it returns the scheduled elements (its rows), as Revit's does."""
    _view_type = ViewType.Schedule
    _type_label = "Schedule"

    def __init__(self, document: Document, name: str, category: EnumValue | None = None, **kwargs: Any) -> None:
        super().__init__(document, name, **kwargs)
        self._scheduled = category if category is not None else BuiltInCategory.OST_Doors

    def _shows(self, element: Element) -> bool:
        category = element.Category
        return category is not None and category.BuiltInCategory == self._scheduled


class ViewSheet(View):
    """A sheet: it shows viewports and annotations, never model elements directly."""
    _view_type = ViewType.DrawingSheet
    _type_label = "Sheet"


class InternalElement(Element):
    """An element with no category, like the many bookkeeping elements regeneration touches."""


# --- failures ----------------------------------------------------------------------------------

class FailureDefinitionId:
    def __init__(self, guid: Any = None) -> None:
        self.Guid = guid or uuid.uuid4()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FailureDefinitionId) and other.Guid == self.Guid

    def __hash__(self) -> int:
        return hash(self.Guid)


_FAILURE_DEFINITIONS: dict[FailureDefinitionId, tuple[EnumValue, str]] = {}


def _define(severity: EnumValue, text: str) -> FailureDefinitionId:
    definition = FailureDefinitionId()
    _FAILURE_DEFINITIONS[definition] = (severity, text)
    return definition


class BuiltInFailures:
    class OverlapFailures:
        WallsOverlap = _define(FailureSeverity.Warning,
                               "Highlighted walls overlap. One of them may be ignored when Revit finds room "
                               "boundaries. Use Cut Geometry to embed one wall within the other.")

    class GeneralFailures:
        DuplicateValue = _define(FailureSeverity.Warning, 'Elements have duplicate "Mark" values.')

    class JoinElementsFailures:
        CannotJoinElementsError = _define(FailureSeverity.Error, "Can't join elements.")


class FailureMessage:
    def __init__(self, definition_id: FailureDefinitionId) -> None:
        self._definition = definition_id
        self._failing: list[ElementId] = []

    def SetFailingElement(self, element_id: ElementId) -> FailureMessage:
        self._failing = [element_id]
        return self

    def SetFailingElements(self, element_ids: Any) -> FailureMessage:
        self._failing = list(element_ids)
        return self

    def GetFailingElements(self) -> NetList:
        return NetList(self._failing)

    def GetSeverity(self) -> EnumValue:
        return _FAILURE_DEFINITIONS[self._definition][0]


class FailureMessageAccessor:
    def __init__(self, message: FailureMessage) -> None:
        self._message = message

    def GetFailureDefinitionId(self) -> FailureDefinitionId:
        return self._message._definition

    def GetSeverity(self) -> EnumValue:
        return self._message.GetSeverity()

    def GetDescriptionText(self) -> str:
        return _FAILURE_DEFINITIONS[self._message._definition][1]

    def GetFailingElementIds(self) -> NetList:
        return NetList(self._message._failing)

    def HasResolutions(self) -> bool:
        return False


class FailuresAccessor:
    def __init__(self, document: Document, messages: list[FailureMessage], transaction_name: str,
                 options: FailureHandlingOptions | None = None) -> None:
        self._options = options or FailureHandlingOptions()
        self._document = document
        self._messages = list(messages)
        self._transaction_name = transaction_name
        self._valid = True

    def _check(self) -> None:
        if not self._valid:
            raise exc.InvalidObjectException("The FailuresAccessor is no longer valid.")

    def GetDocument(self) -> Document:
        return self._document

    def GetTransactionName(self) -> str:
        return self._transaction_name

    def GetFailureHandlingOptions(self) -> FailureHandlingOptions:
        self._check()
        return self._options._copy()

    def SetFailureHandlingOptions(self, options: FailureHandlingOptions) -> None:
        self._check()
        self._options = options._copy()

    def GetFailureMessages(self, severity: EnumValue | None = None) -> NetList:
        self._check()
        return NetList(FailureMessageAccessor(m) for m in self._messages
                       if severity is None or m.GetSeverity() == severity)

    def GetSeverity(self) -> EnumValue:
        severities = [int(m.GetSeverity()) for m in self._messages]
        return FailureSeverity.Error if 2 in severities else (
            FailureSeverity.Warning if severities else getattr(FailureSeverity, "None"))

    def DeleteWarning(self, failure: FailureMessageAccessor) -> None:
        self._check()
        if failure.GetSeverity() != FailureSeverity.Warning:
            raise exc.ArgumentException("The failure is not a warning and cannot be deleted.")
        self._messages = [m for m in self._messages if m is not failure._message]

    def DeleteAllWarnings(self) -> None:
        self._check()
        self._messages = [m for m in self._messages if m.GetSeverity() != FailureSeverity.Warning]

    def ResolveFailure(self, failure: FailureMessageAccessor) -> None:
        raise exc.InvalidOperationException("The failure has no resolution.")


class IFailuresPreprocessor:
    """Interface: PreprocessFailures(failuresAccessor) -> FailureProcessingResult."""


class FailureHandlingOptions:
    def __init__(self) -> None:
        self._forced_modal = True
        self._clear_after_rollback = False
        self._preprocessor: Any = None

    def SetForcedModalHandling(self, flag: bool) -> FailureHandlingOptions:
        self._forced_modal = bool(flag)
        return self

    def GetForcedModalHandling(self) -> bool:
        return self._forced_modal

    def SetClearAfterRollback(self, flag: bool) -> FailureHandlingOptions:
        self._clear_after_rollback = bool(flag)
        return self

    def GetClearAfterRollback(self) -> bool:
        return self._clear_after_rollback

    def SetFailuresPreprocessor(self, preprocessor: Any) -> FailureHandlingOptions:
        self._preprocessor = preprocessor
        return self

    def GetFailuresPreprocessor(self) -> Any:
        return self._preprocessor

    def _copy(self) -> FailureHandlingOptions:
        copy = FailureHandlingOptions()
        copy._forced_modal, copy._clear_after_rollback = self._forced_modal, self._clear_after_rollback
        copy._preprocessor = self._preprocessor
        return copy


# --- transactions ------------------------------------------------------------------------------

class _NamedTransactionStatus:
    """What Transaction and TransactionGroup share in the real API: a name and a status."""

    _name: str
    _status: EnumValue

    def GetName(self) -> str:
        return self._name

    def SetName(self, name: str) -> None:
        self._name = name

    def GetStatus(self) -> EnumValue:
        return self._status

    def HasStarted(self) -> bool:
        return self._status != TransactionStatus.Uninitialized

    def HasEnded(self) -> bool:
        return self._status in (TransactionStatus.Committed, TransactionStatus.RolledBack)


class Transaction(_NamedTransactionStatus):
    def __init__(self, document: Document, name: str = "") -> None:
        self._document = document
        self._name = name
        self._status = TransactionStatus.Uninitialized
        self._options = FailureHandlingOptions()

    def GetFailureHandlingOptions(self) -> FailureHandlingOptions:
        return self._options

    def SetFailureHandlingOptions(self, options: FailureHandlingOptions) -> None:
        self._options = options

    def Start(self, name: str | None = None) -> EnumValue:
        Session.check_api_context("Transaction.Start")
        if name:
            self._name = name
        if not self._name:
            raise exc.ArgumentException("A transaction needs a name.")
        doc = self._document
        if doc._linked:  # Revit: a linked document cannot be modified from the host
            raise exc.InvalidOperationException("The document is a linked document: it cannot be modified.")
        if doc._transaction is not None or doc._world._read_only_reason:
            raise exc.InvalidOperationException(
                "Starting a new transaction is not permitted. It could be because another transaction already "
                "started and has not been completed yet, or the document is in a state in which it cannot start "
                "a new transaction (e.g. during failure handling or a read-only mode, which could be either "
                "permanent or temporary).")
        doc._begin(self)
        self._status = TransactionStatus.Started
        return self._status

    def Commit(self, options: FailureHandlingOptions | None = None) -> EnumValue:
        Session.check_api_context("Transaction.Commit")
        self._require_started()
        if options is not None:
            self._options = options
        self._status = self._document._commit(self, self._options)
        return self._status

    def RollBack(self, options: FailureHandlingOptions | None = None) -> EnumValue:
        Session.check_api_context("Transaction.RollBack")
        self._require_started()
        self._document._rollback()
        self._status = TransactionStatus.RolledBack
        return self._status

    def Dispose(self) -> None:
        if self._status == TransactionStatus.Started:
            self.RollBack()

    def _require_started(self) -> None:
        if self._status != TransactionStatus.Started or self._document._transaction is not self:
            raise exc.InvalidOperationException("The transaction has not been started.")


class TransactionGroup(_NamedTransactionStatus):
    """Transactions committed while the group is open stay undoable as a whole until it ends."""

    def __init__(self, document: Document, name: str = "") -> None:
        self._document = document
        self._name = name
        self._status = TransactionStatus.Uninitialized
        self._committed: list[tuple[str, list[Any], set[int], set[int], set[int]]] = []
        self.IsFailureHandlingForcedModal = False

    @property
    def IsValidObject(self) -> bool:
        return True

    def Start(self, name: str | None = None) -> EnumValue:
        Session.check_api_context("TransactionGroup.Start")
        if name:
            self._name = name
        if not self._name:
            raise exc.ArgumentException("A transaction group needs a name.")
        if self._document._transaction is not None:
            raise exc.InvalidOperationException("A transaction group cannot start while a transaction is open.")
        self._document._groups.append(self)
        self._status = TransactionStatus.Started
        return self._status

    def Assimilate(self) -> EnumValue:
        Session.check_api_context("TransactionGroup.Assimilate")
        return self._close(TransactionStatus.Committed)

    def Commit(self) -> EnumValue:
        Session.check_api_context("TransactionGroup.Commit")
        return self._close(TransactionStatus.Committed)

    def RollBack(self) -> EnumValue:
        Session.check_api_context("TransactionGroup.RollBack")
        self._close(TransactionStatus.RolledBack)
        if not self._committed:
            return self._status
        added: set[int] = set()
        modified: set[int] = set()
        deleted: set[int] = set()
        for _name, journal, t_added, t_modified, t_deleted in reversed(self._committed):
            for undo in reversed(journal):
                undo()
            added |= t_deleted  # undoing a deletion brings the element back
            deleted |= t_added
            modified |= t_modified
        gone = added & deleted
        added, deleted = added - gone, deleted - gone
        names = [entry[0] for entry in self._committed]
        self._document._world._fire_document_changed(
            self._document, names, added, modified - added - deleted, deleted, "TransactionGroupRolledBack")
        return self._status

    def Dispose(self) -> None:
        if self._status == TransactionStatus.Started:
            self.RollBack()

    def _close(self, status: EnumValue) -> EnumValue:
        doc = self._document
        if self._status != TransactionStatus.Started or not doc._groups or doc._groups[-1] is not self:
            raise exc.InvalidOperationException("The transaction group has not been started or is not the innermost.")
        if doc._transaction is not None:
            raise exc.InvalidOperationException("A transaction group cannot end while a transaction is open.")
        doc._groups.pop()
        self._status = status
        if status == TransactionStatus.Committed and doc._groups:
            doc._groups[-1]._committed.extend(self._committed)  # still undoable by the enclosing group
        return status

    def _record(self, name: str, journal: list[Any], added: set[int], modified: set[int], deleted: set[int]) -> None:
        self._committed.append((name, journal, set(added), set(modified), set(deleted)))


class RevitLinkInstance(Element):
    """A linked Revit model placed in the host. `linked`: its document (None: the link is not loaded);
    `broken`: Revit raises when asked for its document."""

    def __init__(self, document: Document, name: str, linked: Document | None, transform: Transform,
                 broken: bool = False) -> None:
        super().__init__(document, name)
        self._linked_document, self._transform, self._broken = linked, transform, broken

    @property
    def Name(self) -> str:
        return self._name

    def GetLinkDocument(self) -> Document | None:
        Session.check_api_context("RevitLinkInstance.GetLinkDocument")
        if self._broken:
            raise exc.InvalidOperationException("The link's document could not be accessed.")
        return self._linked_document

    def GetTotalTransform(self) -> Transform:
        return self._transform


# --- collector ----------------------------------------------------------------------------------

class FilteredElementCollector:
    def __init__(self, document: Document, view_id: ElementId | None = None) -> None:
        Session.check_api_context("FilteredElementCollector")
        self._document = document
        elements = list(document._elements.values())
        if view_id is not None:
            view = document.GetElement(view_id)
            elements = [e for e in elements if view._visible(e)]
        self._elements = elements

    def _narrow(self, keep: Any) -> FilteredElementCollector:
        self._elements = [e for e in self._elements if keep(e)]
        return self

    def OfCategory(self, built_in: EnumValue) -> FilteredElementCollector:
        return self._narrow(lambda e: e.Category is not None and e.Category.BuiltInCategory == built_in)

    def OfClass(self, cls: type) -> FilteredElementCollector:
        return self._narrow(lambda e: isinstance(e, cls))

    def WhereElementIsNotElementType(self) -> FilteredElementCollector:
        return self._narrow(lambda e: not isinstance(e, ElementType))

    def WhereElementIsElementType(self) -> FilteredElementCollector:
        return self._narrow(lambda e: isinstance(e, ElementType))

    def ToElements(self) -> NetList:
        return NetList(self._elements)

    def ToElementIds(self) -> NetList:
        return NetList(e.Id for e in self._elements)

    def GetElementCount(self) -> int:
        return len(self._elements)

    def FirstElement(self) -> Element | None:
        return self._elements[0] if self._elements else None

    def __iter__(self) -> Any:
        return iter(list(self._elements))


# --- image export ------------------------------------------------------------------------------

class ImageExportOptions:
    def __init__(self) -> None:
        self.ZoomType = ZoomFitType.Zoom
        self.Zoom = 50
        self.PixelSize = 512
        self.FilePath = ""
        self.FitDirection = FitDirectionType.Horizontal
        self.ImageResolution = ImageResolution.DPI_72
        self.ExportRange = ExportRange.CurrentView
        self.HLRandWFViewsFileType = ImageFileType.BMP
        self.ShadowViewsFileType = ImageFileType.BMP
        self._views: list[ElementId] = []

    def SetViewsAndSheets(self, views: Any) -> None:
        self._views = list(views)

    def GetViewsAndSheets(self) -> NetList:
        return NetList(self._views)

    @staticmethod
    def GetFileName(document: Document, view_id: ElementId) -> str:
        view = document.GetElement(view_id)
        return view._type_label + " - " + view.Name


class DWGExportOptions:
    pass


class TransactWithCentralOptions:
    pass


class SynchronizeWithCentralOptions:
    pass


class DocumentSet:
    """The open documents (Application.Documents), iterable like the .NET collection."""

    def __init__(self, documents: Any = ()) -> None:
        self._documents = list(documents)

    @property
    def Size(self) -> int:
        return len(self._documents)

    @property
    def IsEmpty(self) -> bool:
        return not self._documents

    def Contains(self, document: Any) -> bool:
        return any(d is document for d in self._documents)

    def __iter__(self) -> Any:
        return iter(list(self._documents))


# --- the document ------------------------------------------------------------------------------

class Document:
    def __init__(self, world: Any, title: str) -> None:
        self._world = world
        self._title = title
        self._elements: dict[int, Element] = {}
        self._next_id = 100000
        self._transaction: Transaction | None = None
        self._journal: list[Any] = []
        self._added: set[int] = set()
        self._modified: set[int] = set()
        self._deleted: set[int] = set()
        self._removed: dict[int, Element] = {}
        self._posted: list[FailureMessage] = []
        self._pending: tuple[Transaction, list[str]] | None = None
        self._marks_changed = False
        self._default_wall_type: Any = None
        self._groups: list[TransactionGroup] = []
        self._rollback_fault: Any = None
        self._workshared = False
        self._linked = False
        self._operations: list[str] = []  # what Save/SaveAs/Synchronize/Export/Close actually did
        self.Application: Any = None

    # read API
    @property
    def Title(self) -> str:
        return self._title

    @property
    def PathName(self) -> str:
        return "C:\\Projects\\" + self._title + ".rvt"

    @property
    def IsModifiable(self) -> bool:
        return self._transaction is not None

    @property
    def IsReadOnly(self) -> bool:
        return False

    @property
    def IsFamilyDocument(self) -> bool:
        return False

    @property
    def IsLinked(self) -> bool:
        return self._linked

    @property
    def IsWorkshared(self) -> bool:
        return self._workshared

    @property
    def ActiveView(self) -> View | None:
        return self._world.active_view

    def Equals(self, other: Any) -> bool:
        return other is self

    def GetElement(self, element_id: Any) -> Element | None:
        Session.check_api_context("Document.GetElement")
        if isinstance(element_id, str):
            return next((e for e in self._elements.values() if e.UniqueId == element_id), None)
        if not isinstance(element_id, ElementId):
            raise exc.ArgumentException("GetElement takes an ElementId or a UniqueId string.")
        return self._elements.get(element_id._value)

    # write API
    def Delete(self, element_ids: Any) -> NetList:
        Session.check_api_context("Document.Delete")
        self._require_transaction()
        ids = [element_ids] if isinstance(element_ids, ElementId) else list(element_ids)
        deleted = NetList()
        for element_id in ids:
            element = self._elements.get(element_id._value)
            if element is None:
                raise exc.ArgumentException("The element does not exist in the document.")
            for victim in element._dependents() + [element]:
                if victim.Id._value in self._elements:
                    self._remove(victim)
                    deleted.Add(victim.Id)
        return deleted

    def Regenerate(self) -> None:
        Session.check_api_context("Document.Regenerate")
        self._require_transaction()

    def PostFailure(self, failure: FailureMessage) -> None:
        self._require_transaction()
        self._posted.append(failure)

    # operations guarded by cancellable pre-events
    def Save(self, options: Any = None) -> None:
        Session.check_api_context("Document.Save")
        self._ask("DocumentSaving", events.DocumentSavingEventArgs(self))
        self._require_closed_transactions("Save")
        self._operations.append("save")

    def SaveAs(self, path: str, options: Any = None) -> None:
        Session.check_api_context("Document.SaveAs")
        self._ask("DocumentSavingAs", events.DocumentSavingAsEventArgs(self, str(path)))
        self._require_closed_transactions("SaveAs")
        self._operations.append("save as " + str(path))

    def SynchronizeWithCentral(self, transactOptions: Any, syncOptions: Any) -> None:
        Session.check_api_context("Document.SynchronizeWithCentral")
        if not self._workshared:
            raise exc.InvalidOperationException("The document is not workshared.")
        self._ask("DocumentSynchronizingWithCentral", events.DocumentSynchronizingWithCentralEventArgs(self))
        self._require_closed_transactions("SynchronizeWithCentral")
        self._operations.append("sync")

    def Close(self, saveModified: bool = True) -> bool:
        Session.check_api_context("Document.Close")
        if self is self._world.doc:
            raise exc.InvalidOperationException("The active document cannot be closed by the API.")
        self._ask("DocumentClosing", events.DocumentClosingEventArgs(self, id(self)))
        self._require_closed_transactions("Close")
        self._world.documents.remove(self)
        self._operations.append("close")
        return True

    def Export(self, folder: str, name: str, views: Any, options: Any) -> bool:
        Session.check_api_context("Document.Export")
        file_format = ImportExportFileFormat.DWG if isinstance(options, DWGExportOptions) else ImportExportFileFormat.DWF
        self._ask("FileExporting", events.FileExportingEventArgs(self, os.path.join(folder, name), file_format))
        self._operations.append("export " + str(file_format))
        return True

    def _ask(self, event_name: str, args: Any) -> None:
        application = self._world.app
        getattr(application, event_name).fire(application, args)
        if args.IsCancelled():
            raise exc.OperationCanceledException("The operation was cancelled by an event handler (" + event_name + ").")

    def _require_closed_transactions(self, what: str) -> None:
        if self._transaction is not None or self._groups:
            raise exc.InvalidOperationException(what + " is not allowed while a transaction or transaction group is open.")

    def ExportImage(self, options: ImageExportOptions) -> None:
        Session.check_api_context("Document.ExportImage")
        self._ask("FileExporting", events.FileExportingEventArgs(self, options.FilePath, ImportExportFileFormat.Image))
        folder = os.path.dirname(options.FilePath)
        if not folder or not os.path.isdir(folder):
            raise exc.ArgumentException("The folder of FilePath does not exist.")
        if options.ExportRange != ExportRange.SetOfViews:
            views = [self._world.active_view.Id]
        else:
            views = options.GetViewsAndSheets()
        for view_id in views:
            view = self.GetElement(view_id)
            if not isinstance(view, View) or not view.CanBePrinted:
                raise exc.ArgumentException("The view cannot be exported as an image.")
            width, height = view._outline
            if options.FitDirection == FitDirectionType.Horizontal:
                size = (int(options.PixelSize), max(1, round(options.PixelSize * height / width)))
            else:
                size = (max(1, round(options.PixelSize * width / height)), int(options.PixelSize))
            if view._view_type == ViewType.ThreeD or view._view_type == ViewType.Section:
                file_type = options.ShadowViewsFileType
            else:
                file_type = options.HLRandWFViewsFileType
            extension = {"PNG": ".png", "BMP": ".bmp", "TIFF": ".tif"}.get(str(file_type), ".jpg")
            path = options.FilePath + " - " + ImageExportOptions.GetFileName(self, view_id) + extension
            self._world._write_image(path, size, extension)

    # internals used by the fake's write API and transactions
    def _allocate_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _require_transaction(self) -> None:
        if self._transaction is None:
            raise exc.ModificationOutsideTransactionException("Attempt to modify the model outside of transaction.")

    def _seed(self, element: Element) -> Element:
        self._elements[element.Id._value] = element
        return element

    def _add(self, element: Element) -> None:
        self._require_transaction()
        key = element.Id._value
        self._elements[key] = element
        self._journal.append(lambda: self._elements.pop(key, None))
        self._added.add(key)

    def _modify(self, element: Element, undo: Any, geometry: bool = False) -> None:
        Session.check_api_context("modify element")
        self._require_transaction()
        self._journal.append(undo)
        if element.Id._value not in self._added:
            self._modified.add(element.Id._value)
        if geometry and isinstance(element, Wall):
            self._walls_changed.add(element.Id._value)

    def _remove(self, element: Element) -> None:
        key = element.Id._value
        del self._elements[key]
        self._journal.append(lambda: self._elements.__setitem__(key, element))
        if key in self._added:
            self._added.discard(key)
        else:
            self._modified.discard(key)
            self._deleted.add(key)

    def _begin(self, transaction: Transaction) -> None:
        self._transaction = transaction
        self._journal = []
        self._added, self._modified, self._deleted = set(), set(), set()
        self._walls_changed: set[int] = set()
        self._posted = []
        self._marks_changed = False

    def _finish_pending(self) -> None:
        """Revit idles after the API call: the person resolves the pending failures (here: cancel, so
        the pending transaction rolls back)."""
        if self._pending is None:
            return
        transaction, texts = self._pending
        self._pending = None
        self._world.blocking_dialogs.append(texts)
        self._rollback()
        transaction._status = TransactionStatus.RolledBack

    def _rollback(self) -> None:
        for undo in reversed(self._journal):
            undo()
        self._journal = []
        self._transaction = None
        if self._rollback_fault is not None:  # a test's stand-in for a rollback that undoes too much
            fault, self._rollback_fault = self._rollback_fault, None
            fault()

    def _regenerate(self) -> None:
        """What regeneration does at commit: joins, views, bookkeeping; plus the warnings it finds."""
        changed = [self._elements[k] for k in self._added | self._walls_changed if k in self._elements]
        walls = [e for e in self._elements.values() if isinstance(e, Wall)]
        touched: set[int] = set()
        for wall in (e for e in changed if isinstance(e, Wall)):
            ends = wall._endpoints()
            for other in walls:
                if other is wall or other.LevelId != wall.LevelId:
                    continue
                other_ends = other._endpoints()
                if all(any(p.IsAlmostEqualTo(q) for q in other_ends) for p in ends):
                    self._posted.append(FailureMessage(BuiltInFailures.OverlapFailures.WallsOverlap)
                                        .SetFailingElements([wall.Id, other.Id]))
                elif any(p.IsAlmostEqualTo(q) for p in ends for q in other_ends):
                    touched.add(other.Id._value)  # joined walls are regenerated
            for view in self._elements.values():
                if isinstance(view, ViewPlan) and view.GenLevel.Id == wall.LevelId or isinstance(view, View3D):
                    touched.add(view.Id._value)
            touched.update(k for k, e in self._elements.items() if isinstance(e, InternalElement))
        if self._deleted:
            touched.update(k for k, e in self._elements.items() if isinstance(e, (View3D, InternalElement)))
        self._modified |= {k for k in touched if k not in self._added}
        if self._marks_changed:
            by_mark: dict[tuple[str, str], list[Element]] = {}
            for element in self._elements.values():
                mark = element._params.get("Mark")
                if mark is not None and mark._value and element.Category is not None:
                    by_mark.setdefault((element.Category.Name, mark._value), []).append(element)
            for duplicates in by_mark.values():
                if len(duplicates) > 1:
                    self._posted.append(FailureMessage(BuiltInFailures.GeneralFailures.DuplicateValue)
                                        .SetFailingElements([e.Id for e in duplicates]))

    def _commit(self, transaction: Transaction, options: FailureHandlingOptions) -> EnumValue:
        self._regenerate()
        for updater in list(self._world.updaters):
            updater(self)
        remaining = list(self._posted)
        if remaining:
            preprocessor = options.GetFailuresPreprocessor()
            if preprocessor is not None:
                accessor = FailuresAccessor(self, remaining, transaction.GetName(), options._copy())
                result = preprocessor.PreprocessFailures(accessor)
                accessor._valid = False
                remaining = accessor._messages
                if result == FailureProcessingResult.ProceedWithRollBack:
                    if not accessor._options.GetClearAfterRollback():
                        # Without ClearAfterRollback Revit still shows the failures it rolled back for.
                        self._world.blocking_dialogs.append([FailureMessageAccessor(m).GetDescriptionText()
                                                             for m in remaining])
                    self._rollback()
                    return TransactionStatus.RolledBack
        # Another add-in's FailuresProcessing handler may post failures after our preprocessor ran.
        remaining += [FailureMessage(_define(FailureSeverity.Error, text)) for text in
                      self._world.failures_after_preprocessing]
        if any(m.GetSeverity() == FailureSeverity.Error for m in remaining) and not options.GetForcedModalHandling():
            # Modeless failure handling: Revit resolves these with the user after the API call returns.
            self._pending = (transaction, [FailureMessageAccessor(m).GetDescriptionText() for m in remaining])
            return TransactionStatus.Pending
        if remaining:
            texts = [FailureMessageAccessor(m).GetDescriptionText() for m in remaining]
            if options.GetForcedModalHandling() and not self._world.answer_failures_dialog(texts):
                self._world.blocking_dialogs.append(texts)
            if any(m.GetSeverity() == FailureSeverity.Error for m in remaining):
                self._rollback()
                return TransactionStatus.RolledBack
        added, modified, deleted = self._added, self._modified - self._added, self._deleted
        if self._groups:
            self._groups[-1]._record(transaction.GetName(), self._journal, added, modified, deleted)
        self._journal = []
        self._transaction = None
        if added or modified or deleted:
            self._world._fire_document_changed(self, [transaction.GetName()], added, modified, deleted)
        return TransactionStatus.Committed
