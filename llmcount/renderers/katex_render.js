// Pre-render the math of an HTML write-up with KaTeX (llmcount/renderers/html.py runs it with node).
// stdin: JSON {"spans": [{"tex": "...", "display": true}, ...]}; stdout: JSON {"version", "css", "html": [...]}
// where css is the path of katex.min.css (its fonts sit beside it). Any parse error: exit 1, the error on stderr.
// KaTeX is looked up from this file's folder upwards (a source checkout after `npm ci`), from the current folder,
// and from LLMCOUNT_KATEX (a folder holding node_modules/katex, or the katex package itself).
"use strict";
const path = require("path");

function findKatex() {
  const paths = [__dirname, process.cwd()];
  const extra = process.env.LLMCOUNT_KATEX;
  if (extra) paths.unshift(extra, path.dirname(extra));
  return require.resolve("katex", { paths });
}

let entry;
try {
  entry = findKatex();
} catch (err) {
  process.stderr.write("KaTeX not found\n");
  process.exit(3);
}
const katex = require(entry);
const css = path.join(path.dirname(entry), "katex.min.css");

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const html = [];
  for (const { tex, display } of JSON.parse(input).spans) {
    try {
      html.push(
        katex.renderToString(tex, { displayMode: display, throwOnError: true, strict: "error", output: "htmlAndMathml" })
      );
    } catch (err) {
      process.stderr.write(`${String(err.message || err).split("\n")[0]} in: ${tex.slice(0, 200)}\n`);
      process.exit(1);
    }
  }
  process.stdout.write(JSON.stringify({ version: katex.version, css, html }));
});
