"""IFC 4.3 release-candidate geometry (render_drafts.py): a sectioned solid along a gradient curve written in the RC3
form (curve segments measured in their parent curve's parameter and tagged as the draft tags them, cross-section
positions as distances, the dropped FixedAxisVertical) is drawn in 3D as the kernel builds it, and the user's file
stays byte-identical."""
from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest

from ifc_host.render import render_view
from ifc_host.render_bodies import BodyOptions, tessellate_bodies
from ifc_host.render_scene import open_model

ARC_RADIUS = 50.0
ARC_ANGLE = 0.4  # radians, as the draft writes the arc's SegmentLength
STRAIGHT = 20.0
HEIGHT = 10.0

# A 20 m straight then a 20 m arc of radius 50 turning left, at a constant height of 10 m; a 4 m wide, 0.5 m deep
# bed swept along all 40 m of it, its directrix the gradient curve or a segmented reference curve over it (no cant)
# placed by station, as an RC3 exporter writes it. Written by hand in the RC3 form.
_RC3 = """ISO-10303-21;
HEADER;
FILE_DESCRIPTION(('ViewDefinition [Ifc4X3NotAssigned]'),'2;1');
FILE_NAME('draft.ifc','2026-01-01T00:00:00',(),(),'hand','hand',$);
FILE_SCHEMA(('IFC4X3_RC3'));
ENDSEC;
DATA;
#1=IFCPROJECT('0YvctVUKr0kugbFTf53O9L',$,'Draft railway',$,$,$,$,(#10),#2);
#2=IFCUNITASSIGNMENT((#3,#4));
#3=IFCSIUNIT(*,.LENGTHUNIT.,$,.METRE.);
#4=IFCSIUNIT(*,.PLANEANGLEUNIT.,$,.RADIAN.);
#10=IFCGEOMETRICREPRESENTATIONCONTEXT($,'Model',3,1.E-4,#11,$);
#11=IFCAXIS2PLACEMENT3D(#12,$,$);
#12=IFCCARTESIANPOINT((0.,0.,0.));
#13=IFCGEOMETRICREPRESENTATIONSUBCONTEXT('Body','Model',*,*,*,*,#10,$,.MODEL_VIEW.,$);
#20=IFCRAILWAY('1lMTIzNR5FS9cPANJ1EdWa',$,'Line',$,$,#21,$,$,.ELEMENT.);
#21=IFCLOCALPLACEMENT($,#11);
#22=IFCRELAGGREGATES('2lMTIzNR5FS9cPANJ1EdWb',$,$,$,#1,(#20));
#23=IFCRELCONTAINEDINSPATIALSTRUCTURE('3lMTIzNR5FS9cPANJ1EdWc',$,$,$,(#60),#20);
#30=IFCCOMPOSITECURVE((#31,#36),.U.);
#31=IFCCURVESEGMENT(.CONTINUOUS.,#32,IFCNONNEGATIVELENGTHMEASURE(0.),IFCPARAMETERVALUE({straight}),#34);
#32=IFCAXIS2PLACEMENT2D(#33,#39);
#33=IFCCARTESIANPOINT((0.,0.));
#34=IFCLINE(#33,#35);
#35=IFCVECTOR(#39,1.);
#39=IFCDIRECTION((1.,0.));
#36=IFCCURVESEGMENT(.CONTSAMEGRADIENTSAMECURVATURE.,#37,IFCNONNEGATIVELENGTHMEASURE(0.),IFCPARAMETERVALUE({angle}),#38);
#37=IFCAXIS2PLACEMENT2D(#40,#39);
#40=IFCCARTESIANPOINT(({straight},0.));
#38=IFCCIRCLE(#41,{radius});
#41=IFCAXIS2PLACEMENT2D(#33,#39);
#50=IFCGRADIENTCURVE((#51),.U.,#30,$);
#51=IFCCURVESEGMENT(.CONTINUOUS.,#52,IFCNONNEGATIVELENGTHMEASURE(0.),IFCPARAMETERVALUE({length}),#34);
#52=IFCAXIS2PLACEMENT2D(#53,#39);
#53=IFCCARTESIANPOINT((0.,{height}));
#70=IFCSEGMENTEDREFERENCECURVE((#71),.U.,#50,$);
#71=IFCCURVESEGMENT(.CONTINUOUS.,#72,IFCNONNEGATIVELENGTHMEASURE(0.),IFCPARAMETERVALUE({length}),#34);
#72=IFCAXIS2PLACEMENT3D(#73,$,$);
#73=IFCCARTESIANPOINT(({station},0.,0.));
#60=IFCBUILDINGELEMENTPROXY('0ctij$kBPC7vIo5c5aOMNs',$,'Ballast',$,$,#21,#61,$,$);
#61=IFCPRODUCTDEFINITIONSHAPE($,$,(#62));
#62=IFCSHAPEREPRESENTATION(#13,'Body','AdvancedSweptSolid',(#63));
#63=IFCSECTIONEDSOLIDHORIZONTAL({directrix},(#64,#64),({measure}(0.),{measure}({length})),.T.);
#64=IFCARBITRARYCLOSEDPROFILEDEF(.AREA.,'bed',#65);
#65=IFCPOLYLINE((#66,#67,#68,#69,#66));
#66=IFCCARTESIANPOINT((-2.,-0.5));
#67=IFCCARTESIANPOINT((2.,-0.5));
#68=IFCCARTESIANPOINT((1.5,0.));
#69=IFCCARTESIANPOINT((-1.5,0.));
ENDSEC;
END-ISO-10303-21;
"""


def write_rc3(path: Path, measure: str = "IFCNONNEGATIVELENGTHMEASURE", directrix: str = "#50") -> Path:
    path.write_text(_RC3.format(straight=f"{STRAIGHT:.1f}", angle=ARC_ANGLE, radius=f"{ARC_RADIUS:.1f}",
                                length=f"{STRAIGHT + ARC_ANGLE * ARC_RADIUS:.1f}", height=f"{HEIGHT:.1f}",
                                measure=measure, directrix=directrix, station="1000."))
    return path


@pytest.mark.parametrize(("measure", "directrix"), [("IFCNONNEGATIVELENGTHMEASURE", "#50"),
                                                    ("IFCPARAMETERVALUE", "#50"),
                                                    ("IFCNONNEGATIVELENGTHMEASURE", "#70")])
def test_a_draft_sectioned_solid_is_built_along_its_curve(tmp_path: Path, measure: str, directrix: str):
    """The bed is built by the kernel (not a stand-in), where the draft puts it: along the straight, then round the
    arc to its end, 10 m up."""
    model = open_model(str(write_rc3(tmp_path / "draft.ifc", measure, directrix)))
    (element,) = model.by_type("IfcBuildingElementProxy")
    bodies = tessellate_bodies(model, [element], BodyOptions())
    assert not bodies.undrawn and not bodies.boxed and not bodies.simplified and not bodies.out_of_time
    verts = bodies.meshes[element.id()].verts
    low, high = verts.min(axis=0), verts.max(axis=0)
    end = np.array([STRAIGHT + ARC_RADIUS * math.sin(ARC_ANGLE), ARC_RADIUS * (1 - math.cos(ARC_ANGLE))])
    across = 2.0 * np.array([math.sin(ARC_ANGLE), math.cos(ARC_ANGLE)])  # the bed's left edge at the arc's end
    assert np.allclose(low, [0.0, -2.0, HEIGHT - 0.5], atol=0.05)
    assert np.allclose(high, [end[0] + across[0], end[1] + across[1], HEIGHT], atol=0.05)


def test_the_3d_of_a_draft_file_draws_and_leaves_the_file_byte_identical(tmp_path: Path):
    path = write_rc3(tmp_path / "draft.ifc", directrix="#70")
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    rendered = render_view(str(path), "3D", [], 600, timeout_s=120)
    assert rendered.png and not rendered.undrawn and not rendered.out_of_time and not rendered.boxed
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["draft.ifc"]
