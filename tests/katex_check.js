// Parse math with KaTeX the way a blog engine would, failing on any error.
// stdin: JSON [{"tex": "...", "display": true}, ...]; stdout: JSON [{"index": i, "tex": "...", "error": "..."}].
// Used by tests/test_writeup_render.py; KaTeX comes from `npm ci` (package.json pins the version).
"use strict";
const katex = require("katex");

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const failures = [];
  JSON.parse(input).forEach(({ tex, display }, index) => {
    try {
      katex.renderToString(tex, { displayMode: display, throwOnError: true, strict: "error" });
    } catch (err) {
      failures.push({ index, tex, error: String(err.message || err) });
    }
  });
  process.stdout.write(JSON.stringify({ version: katex.version, failures }));
});
