"""Host capability providers: everything that differs between host applications (Revit, IFC, ...)."""
