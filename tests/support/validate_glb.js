// Validate GLB files with the Khronos glTF validator (npm gltf-validator): node validate_glb.js FILE...
// Prints one JSON report summary per file on stdout: {file, errors, warnings, messages: [first errors]}.
// The module is found through NODE_PATH (scripts/test installs it into .cache/npm/node_modules).
"use strict";
const fs = require("fs");
const validator = require("gltf-validator");

async function main() {
  const out = [];
  for (const file of process.argv.slice(2)) {
    const report = await validator.validateBytes(new Uint8Array(fs.readFileSync(file)), {maxIssues: 200});
    const issues = report.issues;
    out.push({file, errors: issues.numErrors, warnings: issues.numWarnings,
              messages: issues.messages.filter((m) => m.severity === 0).slice(0, 20)});
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
main().catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(2); });
