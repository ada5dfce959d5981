// @ts-check
// stormctl's devkit build: compiles the workflow sources DIR/workflows/*.ts
// with the Workflow DevKit's own StandaloneBuilder (@workflow/builders) into
// a workflows bundle and a steps bundle under DIR/out, as the framework
// integrations do, and says where they are.
//
//   node build.mjs DIR     (cwd = the kit directory, whose node_modules holds
//                           @workflow/builders and workflow)
//
// Prints one JSON line on stdout:
//   {"workflows": "<abs path>", "steps": "<abs path>", "format": "cjs"|"esm",
//    "manifest": "<abs path of .well-known/workflow/v1/manifest.json>" | null,
//    "builder": "<@workflow/builders version>"}
// Everything else (the builder's own logging) goes to stderr. Exit status 1
// with a message on stderr when the build fails.
//
// Facts this relies on (@workflow/builders 4.1.14, base-builder.js):
//   - StandaloneBuilder.build() writes the steps bundle (createStepsBundle,
//     esbuild format "cjs" unless told otherwise, entry exporting POST =
//     stepEntrypoint), the workflows bundle (createWorkflowsBundle: the
//     workflow code compiled for the VM and embedded as a string in a module
//     exporting POST = workflowEntrypoint(workflowCode)), a webhook bundle
//     and the manifest.
//   - Both bundles include their own copy of @workflow/core (esbuild
//     bundle: true); they find the world through globalThis
//     (Symbol.for('@workflow/world//cache')), not through the kit's copy.
//   - The builder resolves `workflow` (workflow/internal/builtins,
//     workflow/runtime) from DIR, so DIR needs a node_modules that reaches the
//     kit's (this script links DIR/node_modules to the kit's when DIR has
//     none).
//   - A workflow's id is workflow//./workflows/<file>//<export>: the
//     sources must sit in DIR/workflows.
// The format is detected from what was emitted (a later builder may emit ESM
// even into a .cjs name, or choose .mjs), never assumed.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { importResolved, readManifest } from './lib/packages.mjs';

const kit = process.cwd();
const dir = path.resolve(process.argv[2] ?? '.');

// The builder logs to stdout; stdout is reserved for the one answer line.
const out = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);
console.log = (...args) => console.error(...args);
console.info = (...args) => console.error(...args);

function fail(msg) {
  process.stderr.write(`build: ${msg}\n`);
  process.exit(1);
}

if (!fs.existsSync(path.join(dir, 'workflows'))) {
  fail(`${dir}/workflows: no workflow sources`);
}
// The builder resolves workflow/* from DIR: give DIR the kit's modules.
const nm = path.join(dir, 'node_modules');
if (!fs.existsSync(nm)) {
  fs.symlinkSync(path.join(kit, 'node_modules'), nm, 'dir');
}

const req = createRequire(path.join(kit, 'package.json'));
let builders;
/** @type {string | null | undefined} */
let version = null;
try {
  builders = await importResolved(req, '@workflow/builders');
  version = readManifest(path.join(kit, 'node_modules', '@workflow', 'builders')).version;
} catch (err) {
  fail(`cannot load @workflow/builders from ${kit}: ${err.message}`);
}

const builder = new builders.StandaloneBuilder({
  buildTarget: 'standalone',
  workingDir: dir,
  dirs: ['.'],
  stepsBundlePath: 'out/steps.cjs',
  workflowsBundlePath: 'out/workflows.cjs',
  webhookBundlePath: 'out/webhook.mjs',
});
try {
  await builder.build();
} catch (err) {
  fail(`StandaloneBuilder: ${err?.stack ?? err}`);
}

// bundleOf finds what the builder wrote for a bundle asked for as
// out/<name>.cjs (or, should a builder pick its own extension, .mjs/.js).
function bundleOf(name) {
  for (const ext of ['.cjs', '.mjs', '.js']) {
    const p = path.join(dir, 'out', name + ext);
    if (fs.existsSync(p)) return p;
  }
  fail(`the builder wrote no out/${name}.{cjs,mjs,js}`);
}

// formatOf tells ESM from CommonJS by the entry's own export statement at
// the top level of the bundle: esbuild's CJS output assigns
// `module.exports = __toCommonJS(...)` at column 0, its ESM output ends in
// an `export { ... };` at column 0 (the bundled packages' code is indented
// inside esbuild's wrappers, and the workflow code is an escaped string).
function formatOf(file) {
  const text = fs.readFileSync(file, 'utf8');
  if (/^module\.exports = __toCommonJS\(/m.test(text)) return 'cjs';
  if (/^export \{[^}]*\};?$/m.test(text) || /^export (const|function|async|default|let|var|class)\b/m.test(text)) return 'esm';
  if (file.endsWith('.mjs')) return 'esm';
  fail(`cannot tell the module format of ${file}`);
}

// rename puts a bundle under the extension Node loads its format by.
function rename(file, format) {
  const want = format === 'esm' ? '.mjs' : '.cjs';
  if (file.endsWith(want)) return file;
  const to = file.replace(/\.(c|m)?js$/, want);
  fs.renameSync(file, to);
  return to;
}

let workflows = bundleOf('workflows');
let steps = bundleOf('steps');
const format = formatOf(workflows);
if (formatOf(steps) !== format) {
  fail(`the workflows bundle is ${format} but the steps bundle is ${formatOf(steps)}`);
}
workflows = rename(workflows, format);
steps = rename(steps, format);
const manifest = path.join(dir, '.well-known', 'workflow', 'v1', 'manifest.json');
out(JSON.stringify({
  workflows,
  steps,
  format,
  manifest: fs.existsSync(manifest) ? manifest : null,
  builder: version,
}) + '\n');
