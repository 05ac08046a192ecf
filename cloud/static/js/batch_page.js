// The batch page: one batch's progress, per-file results and, under `ask`, keep/discard per file.

import { batchView } from "./batches.js";
import { h } from "./dom.js";

const node = document.getElementById("batch");
batchView(node, node.dataset.batchId)
  .catch((err) => node.append(h("div", { class: "note warn", text: err.message })))
  .finally(() => { document.body.dataset.ready = "1"; });
