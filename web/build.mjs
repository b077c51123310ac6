// Builds the /schedule page into budcluster/schedule_page (or --out DIR):
//   assets/schedule.js     web/src/schedule/main.ts bundled and minified (ES2020)
//   assets/schedule.css    web/src/schedule/styles.css + vis-timeline's stylesheet
//   assets/schedule.js.LEGAL.txt, assets/THIRD-PARTY-LICENSES.txt   the bundled packages' licences
//   index.html             web/src/schedule/index.html with content-hashed asset URLs
// The output is deterministic (no timestamps, no absolute paths): tests rebuild and compare.
// BUD_NO_MINIFY=1 builds a readable bundle for profiling (never commit that one).
import { createHash } from "node:crypto";
import { mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const outIndex = args.indexOf("--out");
const outDir = path.resolve(outIndex >= 0 && args[outIndex + 1] ? args[outIndex + 1] : path.join(here, "../budcluster/schedule_page"));
const assetsDir = path.join(outDir, "assets");
const src = path.join(here, "src/schedule");

// The generated types module holds every document of the contract; only two are used here.
// Mark its `new TypedDocumentString(...)` constants pure so esbuild drops the others (the file
// itself is left as generated).
const pureContractDocuments = {
  name: "pure-contract-documents",
  setup(build) {
    build.onLoad({ filter: /frontend-contract[\\/]types[\\/]graphql\.ts$/ }, async (args) => ({
      contents: (await readFile(args.path, "utf8")).replaceAll("= new TypedDocumentString(", "= /* @__PURE__ */ new TypedDocumentString("),
      loader: "ts",
    }));
  },
};

const common = {
  absWorkingDir: here,
  bundle: true,
  minify: !process.env.BUD_NO_MINIFY,
  sourcemap: false,
  target: "es2020",
  logLevel: "warning",
  write: false,
  metafile: true,
  charset: "utf8",
};

const js = await esbuild.build({
  ...common,
  entryPoints: [path.join(src, "main.ts")],
  outfile: path.join(assetsDir, "schedule.js"),
  format: "iife",
  platform: "browser",
  legalComments: "linked",
  define: { "process.env.NODE_ENV": '"production"' },
  plugins: [pureContractDocuments],
});

const css = await esbuild.build({
  ...common,
  stdin: {
    contents: [
      '@import "vis-timeline/styles/vis-timeline-graph2d.min.css";',
      '@import "./styles.css";',
    ].join("\n"),
    resolveDir: src,
    sourcefile: "schedule-styles.css",
    loader: "css",
  },
  outfile: path.join(assetsDir, "schedule.css"),
  legalComments: "none",
  loader: { ".png": "dataurl", ".svg": "dataurl" },
});

// Licences of every package that ended up in the bundle, sorted by name.
const packages = new Map();
const bundled = [js, css].flatMap((result) =>
  Object.values(result.metafile.outputs).flatMap((output) =>
    Object.entries(output.inputs).filter(([, info]) => info.bytesInOutput > 0).map(([input]) => input),
  ),
);
for (const input of bundled) {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input.replaceAll("\\", "/"));
  if (match) packages.set(match[1], path.join(here, "node_modules", match[1]));
}
const licenceParts = [
  "Third-party software bundled in schedule.js and schedule.css (the /schedule page of budcluster).\n",
];
for (const name of [...packages.keys()].sort()) {
  const dir = packages.get(name);
  const manifest = JSON.parse(await readFile(path.join(dir, "package.json"), "utf8"));
  const files = (await readdir(dir)).filter((f) => /^(licen[cs]e|copying)/i.test(f)).sort();
  licenceParts.push(`\n${"=".repeat(78)}\n${name} ${manifest.version} (${typeof manifest.license === "string" ? manifest.license : "see below"})\n${"=".repeat(78)}\n`);
  if (files.length === 0) licenceParts.push("(no licence file shipped; see the package's manifest)\n");
  for (const file of files) {
    licenceParts.push(`\n--- ${file} ---\n${(await readFile(path.join(dir, file), "utf8")).replaceAll("\r\n", "\n").trimEnd()}\n`);
  }
}

await rm(assetsDir, { recursive: true, force: true });
await mkdir(assetsDir, { recursive: true });
const written = {};
for (const file of [...js.outputFiles, ...css.outputFiles]) {
  const name = path.relative(assetsDir, file.path).replaceAll("\\", "/");
  await writeFile(file.path, file.contents);
  written[name] = file.contents;
}
await writeFile(path.join(assetsDir, "THIRD-PARTY-LICENSES.txt"), licenceParts.join(""));

const digest = (bytes) => createHash("sha256").update(bytes).digest("hex").slice(0, 12);
const template = await readFile(path.join(src, "index.html"), "utf8");
const html = template
  .replaceAll("{{schedule.js}}", `/schedule/assets/schedule.js?v=${digest(written["schedule.js"])}`)
  .replaceAll("{{schedule.css}}", `/schedule/assets/schedule.css?v=${digest(written["schedule.css"])}`);
await writeFile(path.join(outDir, "index.html"), html);

const size = (name) => `${(written[name].length / 1024).toFixed(1)} KiB`;
console.log(`built ${path.relative(process.cwd(), outDir) || "."}: schedule.js ${size("schedule.js")}, schedule.css ${size("schedule.css")}`);
