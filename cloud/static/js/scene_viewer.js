// The interactive 3D view of a scene (glTF 2.0 binary from the scene routes, docs/scene.md), self-contained:
//
//   const viewer = await openViewer(container, sceneUrl, { details, card });
//
// `container` is an empty element (the viewer fills it: toolbar, canvas, info panel); `sceneUrl` answers
// model/gltf-binary (GET /api/sessions/<id>/results/<call>/scene or /api/hosts/<id>/scene?...), or is a
// function resolving to { bytes: ArrayBuffer, summary } (the review card, which gets the scene by a tool call);
// `details` is the result's change_details (before → after values shown for a clicked element);
// `card`, when given, is the tool card whose change-report lines and before → after rows select their element.
// The handle: select(stepIdOrGlobalId or a list of them), fitChanged(), setBefore(bool), isolateStorey(name|""), section(bool),
// showReferences(bool), visiblePointOf(globalId) (a canvas pixel where that element is the first thing hit), close().
// The container's data-state is loading|ready|error, data-highlighted the changed elements' count, data-ghosts
// the GlobalIds shown as ghosts (deleted and moved, in "before"), data-references the reference models'
// elements (context: greyed, never highlighted or counted as changes) and data-references-shown on|off.
//
// three.js comes from the app itself (/vendor/three/, npm ci), loaded only when a viewer opens.

const THREE_URL = "/vendor/three/build/three.module.js";
const GLTF_URL = "/vendor/three/examples/jsm/loaders/GLTFLoader.js";
const ORBIT_URL = "/vendor/three/examples/jsm/controls/OrbitControls.js";
const KIND_COLOURS = { added: 0x2e9d4f, modified: 0xe08a00, deleted: 0xc8322f };
const KIND_WORDS = { added: "added", modified: "modified", deleted: "deleted" };
const SECTION_MARGIN_M = 1.5;
const REFERENCE_COLOUR = 0xaab0ba;  // the reference models around the working one: grey and see-through
const REFERENCE_OPACITY = 0.3;

let libraries = null;
function loadLibraries() {
  // The MCP Apps review card inlines three.js (cloud/scene_bundle.py): no network in its sandbox.
  const bundled = globalThis.NexusThreeBundle;
  libraries = libraries || (bundled ? Promise.resolve(bundled)
    : Promise.all([import(THREE_URL), import(GLTF_URL), import(ORBIT_URL)]));
  return libraries;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) if (child !== null && child !== undefined) node.append(child);
  return node;
}

async function fetchScene(url) {
  const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "model/gltf-binary" } });
  if (!response.ok) {
    let words = `the scene could not be loaded (HTTP ${response.status})`;
    try { words = (await response.json()).error || words; } catch (_) { /* not JSON: keep the status */ }
    throw new Error(words);
  }
  return { bytes: await response.arrayBuffer(), summary: JSON.parse(response.headers.get("X-Nexus-Scene") || "{}") };
}

function addStyleSheet() {
  if (document.querySelector("[data-scene-css]")) return;  // linked already, or inlined (the review card)
  document.head.append(el("link", { rel: "stylesheet", href: "/static/css/scene.css", "data-scene-css": "1" }));
}

export async function openViewer(container, sceneUrl, { details = null, card = null } = {}) {
  addStyleSheet();
  container.classList.add("scene-viewer");
  container.dataset.state = "loading";
  const status = el("div", { class: "scene-status muted", text: "Loading the 3D view…" });
  container.replaceChildren(status);
  const started = performance.now();
  let THREE, GLTFLoader, OrbitControls, scene;
  try {
    const [three, gltf, orbit] = await loadLibraries();
    THREE = three; GLTFLoader = gltf.GLTFLoader; OrbitControls = orbit.OrbitControls;
  } catch (error) {
    return fail(container, "The 3D viewer's library (three.js) is not installed on this server: run `npm ci` in the checkout (scripts/demo does).");
  }
  try {
    scene = typeof sceneUrl === "function" ? await sceneUrl() : await fetchScene(sceneUrl);
  } catch (error) {
    return fail(container, error.message);
  }
  const gltf = await new Promise((resolve, reject) => new GLTFLoader().parse(scene.bytes, "", resolve, reject))
    .catch((error) => null);
  if (!gltf) return fail(container, "The scene arrived but could not be read as glTF.");
  const viewer = new SceneViewer(THREE, OrbitControls, container, gltf, scene.summary, details);
  if (card) viewer.linkCard(card);
  container.dataset.state = "ready";
  container.dataset.loadMs = String(Math.round(performance.now() - started));
  container.sceneViewer = viewer;
  return viewer;
}

function fail(container, words) {
  container.dataset.state = "error";
  container.replaceChildren(el("div", { class: "note warn scene-error", text: words }));
  return null;
}

class SceneViewer {
  constructor(THREE, OrbitControls, container, gltf, summary, details) {
    this.THREE = THREE;
    this.container = container;
    this.details = new Map(((details && details.elements) || []).map((e) => [e.id, e]));
    this.root = gltf.scene;
    this.nodeNames = nodeNames(gltf); // GlobalIds as the file spells them (three.js sanitises object names)
    this.sceneExtras = (gltf.scenes && gltf.scenes[0] && gltf.scenes[0].userData) || gltf.scene.userData || {};
    this.elements = []; // {object, extras, name, meshes}: the working model's
    this.references = []; // the same for the reference models' elements (extras.model: the reference's name)
    this.byGlobalId = new Map();
    this.byStepId = new Map();
    this.owners = new WeakMap(); // mesh -> its element's record (not in userData: three.js clones that as JSON)
    this.sharedMaterials = new WeakMap(); // a selected element's mesh -> the material it shares when not selected
    this.ghosts = [];
    this.referencesShown = true;
    this.before = false;
    this.selected = null;

    this.three = new THREE.Scene();
    this.three.background = new THREE.Color(0xf4f5f7);
    this.three.add(new THREE.HemisphereLight(0xffffff, 0x8d8d8d, 2.2));
    const sun = new THREE.DirectionalLight(0xffffff, 1.6);
    sun.position.set(-30, 60, 40);
    this.three.add(sun);
    this.three.add(this.root);
    this.root.updateMatrixWorld(true);
    this.collect();

    this.canvas = el("canvas", { class: "scene-canvas", tabindex: "0", "aria-label": "3D view of the model" });
    this.renderer = new THREE.WebGLRenderer({ canvas: this.canvas, antialias: true, preserveDrawingBuffer: true });
    this.renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
    this.renderer.localClippingEnabled = true;
    this.camera = new THREE.PerspectiveCamera(45, 1, 0.05, 5000);
    this.controls = new OrbitControls(this.camera, this.canvas);
    this.controls.addEventListener("change", () => this.draw());
    this.raycaster = new THREE.Raycaster();

    this.info = el("div", { class: "scene-info", "aria-live": "polite" },
      el("span", { class: "muted", text: "Click an element to see what it is and what changed." }));
    container.replaceChildren(this.toolbar(summary), this.canvas, this.legend(summary), this.info);
    this.canvas.addEventListener("click", (event) => this.onClick(event));
    this.resizeObserver = new ResizeObserver(() => this.resize());
    this.resizeObserver.observe(container);
    this.resize();
    this.highlight();
    this.fitChanged();
  }

  collect() {
    this.root.traverse((object) => {
      const extras = object.userData || {};
      if (extras.step_id === undefined) return;
      const reference = Boolean(extras.model && extras.model !== "working");
      const record = { object, extras, name: this.nodeNames.get(object) || object.name, meshes: [], reference };
      object.traverse((child) => { if (child.isMesh) { record.meshes.push(child); this.owners.set(child, record); } });
      if (reference) { this.references.push(record); return; }
      this.elements.push(record);
      this.byGlobalId.set(object.name, record);
      this.byStepId.set(extras.step_id, record);  // a reference's step ids are its own: never looked up here
    });
    this.storeys = [...new Set(this.elements.map((e) => e.extras.storey).filter(Boolean))];
    this.changed = this.elements.filter((e) => e.extras.change);
    this.referenceModels = [...new Set(this.references.map((r) => r.extras.model))];
    this.container.dataset.highlighted = String(this.changed.length);
    this.container.dataset.elements = String(this.elements.length);
    this.container.dataset.references = String(this.references.length);
    this.container.dataset.referencesShown = this.references.length ? "on" : "off";
  }

  toolbar(summary) {
    const storeySelect = el("select", { class: "scene-storey", "aria-label": "Storey",
      onchange: (event) => this.isolateStorey(event.target.value) },
      el("option", { value: "", text: "All storeys" }), this.storeys.map((s) => el("option", { value: s, text: s })));
    this.beforeButton = el("button", { type: "button", class: "scene-before", "aria-pressed": "false",
      text: "Before", onclick: () => this.setBefore(!this.before) });
    this.sectionButton = el("button", { type: "button", class: "scene-section", "aria-pressed": "false",
      text: "Section box", onclick: () => this.section(this.sectionButton.getAttribute("aria-pressed") !== "true") });
    this.referencesButton = this.references.length ? el("button", { type: "button", class: "scene-references",
      "aria-pressed": "true", title: `Reference models: ${this.referenceModels.join(", ")} (context, read-only)`,
      text: "References", onclick: () => this.showReferences(!this.referencesShown) }) : null;
    return el("div", { class: "scene-toolbar" },
      el("button", { type: "button", class: "scene-fit-changed", text: "Fit to changed", onclick: () => this.fitChanged() }),
      el("button", { type: "button", class: "scene-fit-all", text: "Fit all", onclick: () => this.fit(this.visibleRecords()) }),
      this.sectionButton, storeySelect, this.beforeButton, this.referencesButton);
  }

  legend(summary) {
    const counts = { added: 0, modified: 0, deleted: 0 };
    for (const record of this.changed) counts[record.extras.change] += 1;
    const left = [];
    if (summary.omitted_for_size) left.push(`${summary.omitted_for_size} left out to keep the scene small`);
    if (summary.omitted_for_time) left.push(`${summary.omitted_for_time} left out for time`);
    if (summary.undrawn) left.push(`${summary.undrawn} could not be built`);
    if (summary.before_missing) left.push("the model before this change is no longer kept: no ghosts");
    return el("div", { class: "scene-legend muted" },
      Object.entries(counts).filter(([, n]) => n).map(([kind, n]) =>
        el("span", { class: `scene-key ${kind}`, text: `${n} ${KIND_WORDS[kind]}` })),
      el("span", { text: `${this.elements.length} elements${summary.view ? " · " + summary.view : ""}` }),
      this.references.length ? el("span", { class: "scene-key reference",
        text: `${this.references.length} in reference models (${this.referenceModels.join(", ")})` }) : null,
      left.length ? el("span", { class: "scene-left-out", text: left.join(" · ") }) : null);
  }

  highlight() {
    const THREE = this.THREE;
    // One material per (file material, change kind), shared by every mesh that has both: a material per mesh
    // made the first frame of a 1,000-element storey several times slower (a program state per draw).
    const shared = new Map();
    const styled = (material, kind) => {
      const key = `${material.uuid}:${kind || (this.changed.length ? "faded" : "as-is")}`;
      if (!shared.has(key)) {
        const made = material.clone();
        if (kind) {
          made.color = new THREE.Color(KIND_COLOURS[kind]);
          made.emissive = new THREE.Color(KIND_COLOURS[kind]).multiplyScalar(0.25);
        } else if (this.changed.length) {
          made.transparent = true;
          made.opacity = Math.min(made.opacity, 0.55);
          made.depthWrite = false;
        }
        shared.set(key, made);
      }
      return shared.get(key);
    };
    for (const record of this.elements) {
      const kind = record.extras.change;
      for (const mesh of record.meshes) mesh.material = styled(mesh.material, kind);
      if (kind === "deleted") record.object.visible = false; // after: gone; before: a ghost
    }
    // The reference models are context: one grey, see-through material for all of them, whatever their colours.
    const context = new THREE.MeshStandardMaterial({ color: REFERENCE_COLOUR, transparent: true,
      opacity: REFERENCE_OPACITY, depthWrite: false, side: THREE.DoubleSide });
    for (const record of this.references) for (const mesh of record.meshes) mesh.material = context;
    // Ghosts of moved elements at their previous placement, shown in "before".
    for (const record of this.changed) {
      const before = record.extras.before_matrix;
      if (!before || !record.meshes.length) continue;
      const ghost = record.object.clone(true);
      ghost.matrixAutoUpdate = false;
      ghost.matrix.fromArray(before);
      ghost.traverse((child) => {
        if (!child.isMesh) return;
        child.material = new THREE.MeshStandardMaterial({ color: KIND_COLOURS.modified, transparent: true,
          opacity: 0.35, depthWrite: false, side: THREE.DoubleSide });
        this.owners.set(child, record);
      });
      ghost.visible = false;
      record.object.parent.add(ghost);
      record.ghost = ghost;
    }
    for (const record of this.changed.filter((r) => r.extras.change === "deleted")) {
      for (const mesh of record.meshes) {
        mesh.material = new THREE.MeshStandardMaterial({ color: KIND_COLOURS.deleted, transparent: true,
          opacity: 0.4, depthWrite: false, side: THREE.DoubleSide });
      }
    }
    this.root.updateMatrixWorld(true);
  }

  setBefore(on) {
    this.before = Boolean(on);
    this.beforeButton.setAttribute("aria-pressed", String(this.before));
    this.beforeButton.textContent = this.before ? "After" : "Before";
    const ghosts = [];
    for (const record of this.changed) {
      const kind = record.extras.change;
      if (kind === "deleted") {
        record.object.visible = this.before && this.inStorey(record);
        if (this.before && record.meshes.length) ghosts.push(record.name);
      } else if (kind === "added") {
        record.object.visible = !this.before && this.inStorey(record);
      } else if (record.ghost) {
        record.ghost.visible = this.before && this.inStorey(record);
        if (this.before) ghosts.push(record.name);
      }
    }
    this.container.dataset.ghosts = ghosts.join(" ");
    this.container.dataset.mode = this.before ? "before" : "after";
    this.draw();
  }

  inStorey(record) {
    return !this.storey || record.extras.storey === this.storey;
  }

  isolateStorey(name) {
    this.storey = name || "";
    for (const record of this.elements) {
      const kind = record.extras.change;
      const shownNow = kind === "deleted" ? this.before : kind === "added" ? !this.before : true;
      record.object.visible = shownNow && this.inStorey(record);
    }
    this.setBefore(this.before);
    this.showReferences(this.referencesShown);
    this.fit(this.visibleRecords());
  }

  // The reference models' elements on or off; with a storey isolated, only those reaching into its heights.
  showReferences(on) {
    this.referencesShown = Boolean(on) && this.references.length > 0;
    if (this.referencesButton) this.referencesButton.setAttribute("aria-pressed", String(this.referencesShown));
    const storeyBox = this.storey ? this.boxOf(this.elements.filter((r) => r.object.visible && r.meshes.length)) : null;
    for (const record of this.references) {
      let shown = this.referencesShown;
      if (shown && storeyBox && !storeyBox.isEmpty()) {
        const box = new this.THREE.Box3().expandByObject(record.object);
        shown = box.max.y >= storeyBox.min.y && box.min.y <= storeyBox.max.y;
      }
      record.object.visible = shown;
    }
    this.container.dataset.referencesShown = this.referencesShown ? "on" : "off";
    this.draw();
  }

  visibleRecords() {
    return [...this.elements, ...this.references].filter((r) => r.object.visible && r.meshes.length);
  }

  boxOf(records) {
    const box = new this.THREE.Box3();
    for (const record of records) {
      box.expandByObject(record.object);
      if (record.ghost && this.before) box.expandByObject(record.ghost);
    }
    return box;
  }

  fitChanged() {
    const shown = this.changed.filter((r) => r.meshes.length);
    this.fit(shown.length ? shown : this.visibleRecords());
  }

  fit(records) {
    const THREE = this.THREE;
    const box = this.boxOf(records.length ? records : this.elements);
    if (box.isEmpty()) return;
    const centre = box.getCenter(new THREE.Vector3());
    const radius = Math.max(box.getSize(new THREE.Vector3()).length() / 2, 1.5);
    const distance = radius / Math.sin((this.camera.fov * Math.PI) / 360) * 1.1;
    const direction = new THREE.Vector3(-0.6, 0.7, 0.9).normalize(); // from the south-west, above (glTF: y up)
    this.camera.position.copy(centre).addScaledVector(direction, distance);
    this.camera.near = Math.max(distance / 1000, 0.01);
    this.camera.far = distance * 20 + radius * 4;
    this.camera.updateProjectionMatrix();
    this.controls.target.copy(centre);
    this.controls.update();
    this.draw();
  }

  section(on) {
    const THREE = this.THREE;
    this.sectionButton.setAttribute("aria-pressed", String(on));
    let planes = [];
    if (on) {
      const shown = this.changed.filter((r) => r.meshes.length);
      const box = this.boxOf(shown.length ? shown : this.visibleRecords()).expandByScalar(SECTION_MARGIN_M);
      planes = [
        new THREE.Plane(new THREE.Vector3(1, 0, 0), -box.min.x), new THREE.Plane(new THREE.Vector3(-1, 0, 0), box.max.x),
        new THREE.Plane(new THREE.Vector3(0, 1, 0), -box.min.y), new THREE.Plane(new THREE.Vector3(0, -1, 0), box.max.y),
        new THREE.Plane(new THREE.Vector3(0, 0, 1), -box.min.z), new THREE.Plane(new THREE.Vector3(0, 0, -1), box.max.z),
      ];
    }
    this.root.traverse((child) => { if (child.isMesh) child.material.clippingPlanes = planes; });
    this.container.dataset.section = on ? "on" : "off";
    this.draw();
  }

  resize() {
    const width = Math.max(this.container.clientWidth, 120);
    const height = Math.round(Math.min(Math.max(width * 0.65, 220), 520));
    this.renderer.setSize(width, height, false);
    this.canvas.style.width = "100%";
    this.canvas.style.height = `${height}px`;
    this.camera.aspect = width / height;
    this.camera.updateProjectionMatrix();
    this.draw();
  }

  draw() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.renderer.render(this.three, this.camera);
      this.container.dataset.frames = String(Number(this.container.dataset.frames || 0) + 1);
    });
  }

  pickAt(clientX, clientY) {
    const rect = this.canvas.getBoundingClientRect();
    const pointer = new this.THREE.Vector2(((clientX - rect.left) / rect.width) * 2 - 1,
      -((clientY - rect.top) / rect.height) * 2 + 1);
    this.raycaster.setFromCamera(pointer, this.camera);
    const hits = this.raycaster.intersectObject(this.root, true).filter((hit) => visibleChain(hit.object)
      && !clippedAway(hit.point, hit.object.material.clippingPlanes));
    // The reference models are see-through context: a click goes through them to the working model behind.
    const records = hits.map((hit) => this.owners.get(hit.object)).filter(Boolean);
    return records.find((record) => !record.reference) || records[0] || null;
  }

  onClick(event) {
    const record = this.pickAt(event.clientX, event.clientY);
    if (record) this.show(record);
  }

  // One element, or several (a finding's): fit to all those in the scene, show the first.
  select(idsOrGlobalIds) {
    const records = [idsOrGlobalIds].flat()
      .map((id) => this.byGlobalId.get(String(id)) || this.byStepId.get(Number(id))).filter(Boolean);
    if (!records.length) return false;
    if (records.some((r) => r.extras.change === "deleted") && !this.before) this.setBefore(true);
    if (this.storey && records.some((r) => !this.inStorey(r))) this.isolateStorey("");
    this.fit(records);
    this.show(records[0]);
    return true;
  }

  show(record) {
    const THREE = this.THREE;
    if (this.selected) {  // back to the material it shares with others
      for (const mesh of this.selected.meshes) if (this.sharedMaterials.has(mesh)) {
        const own = mesh.material;
        mesh.material = this.sharedMaterials.get(mesh);
        mesh.material.clippingPlanes = own.clippingPlanes;  // a section set meanwhile
        own.dispose();
        this.sharedMaterials.delete(mesh);
      }
    }
    this.selected = record;
    for (const mesh of record.meshes) {
      if (mesh.material.emissive) {  // its own copy while selected: the material is shared
        this.sharedMaterials.set(mesh, mesh.material);
        mesh.material = mesh.material.clone();
        mesh.material.emissive = new THREE.Color(0x3355ff);
      }
    }
    const x = record.extras;
    const rows = [["Class", x.ifc_class], ["Name", x.name || "—"], ["GlobalId", record.name], ["Step id", `#${x.step_id}`],
      ["Storey", x.storey || "—"],
      record.reference ? ["Model", `${x.model} (reference model, read-only)`]
        : ["Change", x.change ? KIND_WORDS[x.change] : "unchanged"]];
    const detail = record.reference ? null : this.details.get(x.step_id);
    const props = Object.entries(x.properties || {});
    this.info.replaceChildren(...[
      el("table", { class: "scene-facts" }, rows.map(([k, v]) => el("tr", {}, el("th", { text: k }),
        el("td", { class: k === "GlobalId" ? "scene-global-id" : null, text: String(v) })))),
      detail && detail.changes && detail.changes.length ? el("table", { class: "scene-diff" },
        el("tr", {}, el("th", { text: "What" }), el("th", { text: "Before" }), el("th", { text: "After" })),
        detail.changes.map((c) => el("tr", {}, el("td", { text: c.key }),
          el("td", { class: "diff-old", text: c.old ?? "—" }), el("td", { class: "diff-new", text: c.new ?? "—" }))))
        : x.before_matrix ? el("div", { class: "muted", text: "Moved: shown at its old place in Before." }) : null,
      props.length ? el("details", { class: "scene-props" }, el("summary", { text: `Properties (${props.length})` }),
        el("table", {}, props.map(([k, v]) => el("tr", {}, el("th", { text: k }), el("td", { text: v }))))) : null,
    ].filter(Boolean));  // replaceChildren would write a null as the text "null"
    this.container.dataset.selected = record.name;
    this.draw();
  }

  // A canvas pixel (client coordinates) where this element (its GlobalId, or its record: a reference's) is what a
  // click picks, or null.
  visiblePointOf(globalIdOrRecord) {
    const record = typeof globalIdOrRecord === "string" ? this.byGlobalId.get(globalIdOrRecord) : globalIdOrRecord;
    if (!record) return null;
    const THREE = this.THREE;
    const rect = this.canvas.getBoundingClientRect();
    for (const mesh of record.meshes) {
      const positions = mesh.geometry.attributes.position;
      const step = Math.max(1, Math.floor(positions.count / 200));
      for (let i = 0; i < positions.count; i += step) {
        const centre = new THREE.Vector3().fromBufferAttribute(positions, i);
        const next = new THREE.Vector3().fromBufferAttribute(positions, (i + 1) % positions.count);
        const point = centre.lerp(next, 0.5).applyMatrix4(mesh.matrixWorld).project(this.camera);
        if (Math.abs(point.x) > 0.98 || Math.abs(point.y) > 0.98) continue;
        const x = rect.left + ((point.x + 1) / 2) * rect.width;
        const y = rect.top + ((1 - point.y) / 2) * rect.height;
        if (document.elementFromPoint(x, y) !== this.canvas) continue;  // under the composer, or scrolled away
        if (this.pickAt(x, y) === record) return { x, y };
      }
    }
    return null;
  }

  // Every change-report line naming an element (#step id) and every before → after row selects it here.
  linkCard(card) {
    for (const row of card.querySelectorAll("tr[data-element-id]")) {
      if (!this.byStepId.has(Number(row.dataset.elementId))) continue;
      row.classList.add("scene-link");
      row.addEventListener("click", () => this.select(Number(row.dataset.elementId)));
    }
    for (const report of card.querySelectorAll("pre.change-report")) {
      if (report.dataset.linked) continue;
      report.dataset.linked = "1";
      const lines = report.textContent.split("\n");
      report.replaceChildren(...lines.flatMap((line, index) => {
        const ids = [...line.matchAll(/#(\d+)/g)].map((m) => Number(m[1])).filter((id) => this.byStepId.has(id));
        const piece = ids.length ? el("span", { class: "scene-link", "data-element-id": String(ids[0]), text: line,
          onclick: () => this.select(ids[0]) }) : document.createTextNode(line);
        return index < lines.length - 1 ? [piece, document.createTextNode("\n")] : [piece];
      }));
    }
  }

  close() {
    this.resizeObserver.disconnect();
    this.controls.dispose();
    this.renderer.dispose();
    this.container.replaceChildren();
    delete this.container.sceneViewer;
  }
}

function nodeNames(gltf) {
  const names = new Map();
  const nodes = (gltf.parser && gltf.parser.json && gltf.parser.json.nodes) || [];
  for (const [object, where] of (gltf.parser && gltf.parser.associations) || []) {
    if (where && where.nodes !== undefined && nodes[where.nodes]) names.set(object, nodes[where.nodes].name);
  }
  return names;
}

function visibleChain(object) {
  for (let node = object; node; node = node.parent) if (!node.visible) return false;
  return true;
}

function clippedAway(point, planes) {
  return (planes || []).some((plane) => plane.distanceToPoint(point) < 0);
}
