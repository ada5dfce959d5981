// @ts-check
// How stormctl's Node scripts load the published packages: from a
// directory stormctl names (an installed kit, a World package, a
// checkout's build), never from wherever the script itself was written,
// and by what each package's package.json says (its root export or main;
// ESM-only packages have no "require" condition for createRequire to
// resolve).

import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * A package's manifest, as far as the scripts read it.
 * @typedef {{name?: string, version?: string, main?: string, exports?: any, [field: string]: any}} Manifest
 */

/**
 * A package read from its directory: dir is its real path (a linked
 * package's dependencies are beside its target, not its link).
 * @typedef {{dir: string, json: Manifest, name: string | undefined, version: string | undefined}} Package
 */

/**
 * readManifest reads dir/package.json.
 * @param {string} dir
 * @returns {Manifest}
 */
export function readManifest(dir) {
  return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
}

/**
 * readPackage reads the package in dir, by its real path.
 * @param {string} dir
 * @returns {Package}
 */
export function readPackage(dir) {
  const abs = fs.realpathSync(path.resolve(dir));
  const json = readManifest(abs);
  return { dir: abs, json, name: json.name, version: json.version };
}

/**
 * entryOf is the module a package's root export names: its exports' "."
 * (import, default or node condition, or a string), else its main, else
 * index.js; relative to the package's directory.
 * @param {Manifest} json
 * @returns {string}
 */
export function entryOf(json) {
  let e = json.exports;
  if (e && typeof e === 'object' && '.' in e) e = e['.'];
  for (let i = 0; e && typeof e === 'object' && i < 4; i++) e = e.import ?? e.default ?? e.node;
  return typeof e === 'string' ? e : (json.main ?? 'index.js');
}

/**
 * importPackage imports a package's root export (entryOf) from its
 * directory, so its own dependencies resolve from there.
 * @param {{dir: string, json: Manifest}} pkg
 * @returns {Promise<any>}
 */
export async function importPackage(pkg) {
  return import(pathToFileURL(path.join(pkg.dir, entryOf(pkg.json))).href);
}

/**
 * importResolved imports the module req resolves spec to (req: a
 * createRequire of the directory the module is seen from).
 * @param {NodeJS.Require} req
 * @param {string} spec
 * @returns {Promise<any>}
 */
export async function importResolved(req, spec) {
  return import(pathToFileURL(req.resolve(spec)).href);
}

/**
 * resolveFrom finds module name's entry as seen from dir: the nearest
 * node_modules/name up from dir (by its real path), then its root export.
 * (createRequire's resolve needs a "require" condition, which ESM-only
 * packages lack.)
 * @param {string} dir
 * @param {string} name
 * @returns {string}
 */
export function resolveFrom(dir, name) {
  for (let d = dir; ; d = path.dirname(d)) {
    const candidate = path.join(d, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) {
      return path.join(fs.realpathSync(candidate), entryOf(readManifest(candidate)));
    }
    if (path.dirname(d) === d) throw new Error(`cannot find ${name} from ${dir}`);
  }
}

/**
 * versionOf is the version in the nearest package.json above a module's
 * entry that names a package and its version ("" for none).
 * @param {string} entry
 * @returns {string}
 */
export function versionOf(entry) {
  for (let d = path.dirname(entry); path.dirname(d) !== d; d = path.dirname(d)) {
    const f = path.join(d, 'package.json');
    if (fs.existsSync(f)) {
      const pkg = JSON.parse(fs.readFileSync(f, 'utf8'));
      if (pkg.name && pkg.version) return pkg.version;
    }
  }
  return '';
}

/**
 * installedVersion is the version of package name installed in
 * from/node_modules, or null (read from its package.json, not through
 * require.resolve: the packages' exports do not all expose package.json).
 * @param {string} name
 * @param {string} from
 * @returns {string | null}
 */
export function installedVersion(name, from) {
  try {
    return readManifest(path.join(from, 'node_modules', name)).version ?? null;
  } catch {
    return null;
  }
}
