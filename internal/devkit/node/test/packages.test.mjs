// @ts-check
// lib/packages.mjs: how the scripts find and load a package, on packages
// laid out in a temporary directory (no npm, no registry).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  entryOf, importPackage, importResolved, installedVersion, readManifest, readPackage, resolveFrom, versionOf,
} from '../lib/packages.mjs';

/** @type {string} */
let root;

/**
 * write lays files out under root.
 * @param {Record<string, string | object>} files
 */
function write(files) {
  for (const [name, body] of Object.entries(files)) {
    const file = path.join(root, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, typeof body === 'string' ? body : JSON.stringify(body));
  }
}

before(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'stormctl-packages-')));
  write({
    // an ESM-only package (no "require" condition), as @workflow/world is
    'kit/node_modules/@scope/esm/package.json': { name: '@scope/esm', version: '1.2.3', type: 'module', exports: { '.': { types: './x.d.ts', import: './dist/index.js' } } },
    'kit/node_modules/@scope/esm/dist/index.js': 'export const kind = "esm";\n',
    // a CommonJS package found by its main
    'kit/node_modules/cjs/package.json': { name: 'cjs', version: '0.1.0', main: 'lib/main.js' },
    'kit/node_modules/cjs/lib/main.js': 'exports.kind = "cjs";\n',
    'kit/package.json': { name: 'kit', private: true },
    // a World package's directory, its own dependency beside it
    'world/package.json': { name: 'world-x', version: '4.4.1', type: 'module', exports: './dist/index.js' },
    'world/dist/index.js': 'export function createWorld() { return { events: {} }; }\n',
    'world/dist/deep/file.js': '',
  });
  fs.symlinkSync(path.join(root, 'world'), path.join(root, 'linked'));
});

after(() => fs.rmSync(root, { recursive: true, force: true }));

describe('entryOf', () => {
  /** @type {[string, import('../lib/packages.mjs').Manifest, string][]} */
  const cases = [
    ['exports as a string', { exports: './dist/index.js' }, './dist/index.js'],
    ['"." with import', { exports: { '.': { import: './esm.js', require: './cjs.cjs' } } }, './esm.js'],
    ['"." with default', { exports: { '.': { default: './d.js' } } }, './d.js'],
    ['conditions without "."', { exports: { import: './i.js', require: './r.cjs' } }, './i.js'],
    ['nested conditions', { exports: { '.': { node: { import: { default: './n.mjs' } } } } }, './n.mjs'],
    ['"." as a string', { exports: { '.': './s.js', './sub': './sub.js' } }, './s.js'],
    ['require only: main', { exports: { '.': { require: './r.cjs' } }, main: 'main.js' }, 'main.js'],
    ['main', { main: 'lib/main.js' }, 'lib/main.js'],
    ['nothing', {}, 'index.js'],
  ];
  for (const [name, json, want] of cases) {
    it(name, () => assert.equal(entryOf(json), want));
  }
});

describe('readPackage', () => {
  it('reads a package by its real path', () => {
    const p = readPackage(path.join(root, 'linked'));
    assert.equal(p.dir, path.join(root, 'world'));
    assert.equal(p.name, 'world-x');
    assert.equal(p.version, '4.4.1');
    assert.deepEqual(readManifest(p.dir), p.json);
  });
  it('fails on a directory without a package', () => {
    assert.throws(() => readPackage(path.join(root, 'nowhere')), { code: 'ENOENT' });
  });
});

describe('importPackage', () => {
  it('imports the root export from the package directory', async () => {
    const mod = await importPackage(readPackage(path.join(root, 'linked')));
    assert.equal(typeof mod.createWorld, 'function');
  });
});

describe('importResolved', () => {
  it('imports what a require of the kit resolves', async () => {
    const req = createRequire(path.join(root, 'kit', 'package.json'));
    assert.equal((await importResolved(req, 'cjs')).kind, 'cjs');
    await assert.rejects(importResolved(req, 'missing'), { code: 'MODULE_NOT_FOUND' });
  });
});

describe('resolveFrom', () => {
  it('finds an ESM-only package up the tree, which createRequire cannot resolve', async () => {
    const from = path.join(root, 'kit', 'deep', 'er');
    fs.mkdirSync(from, { recursive: true });
    const entry = resolveFrom(from, '@scope/esm');
    assert.equal(entry, path.join(root, 'kit', 'node_modules', '@scope', 'esm', 'dist', 'index.js'));
    assert.throws(() => createRequire(path.join(root, 'kit', 'package.json')).resolve('@scope/esm'));
    assert.equal((await import(entry)).kind, 'esm');
  });
  it('says what it cannot find', () => {
    assert.throws(() => resolveFrom(path.join(root, 'kit'), 'absent'), /cannot find absent from /);
  });
});

describe('versions', () => {
  it('versionOf reads the package above an entry', () => {
    assert.equal(versionOf(path.join(root, 'world', 'dist', 'deep', 'file.js')), '4.4.1');
    assert.equal(versionOf(path.join(root, 'kit', 'node_modules', '@scope', 'esm', 'dist', 'index.js')), '1.2.3');
  });
  it('versionOf skips a package.json naming no package', () => {
    write({ 'world/dist/package.json': { type: 'module' } });
    assert.equal(versionOf(path.join(root, 'world', 'dist', 'index.js')), '4.4.1');
  });
  it('installedVersion reads node_modules, null for none', () => {
    assert.equal(installedVersion('@scope/esm', path.join(root, 'kit')), '1.2.3');
    assert.equal(installedVersion('absent', path.join(root, 'kit')), null);
  });
});
