'use strict'
// One MongoDB driver in the installed tree, the one mongoose uses: our
// `mongodb` dependency follows mongoose's range so npm installs it once. Two
// copies load twice the code, and a collection taken from mongoose's
// connection does not type-check as our driver's Collection (TS2322).
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { removeDir } = require('../helpers/temp-dir')

const ROOT = path.join(__dirname, '..', '..')

/** Every installed copy of the package `name` under `dir` (node_modules at any depth). */
function installed (dir, name, found = []) {
  let entries
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true })
  } catch {
    return found
  }
  for (const entry of entries) {
    if (!entry.isDirectory()) continue // links (workspaces, npm link) are someone else's tree
    const child = path.join(dir, entry.name)
    if (entry.name.startsWith('@')) {
      installed(child, name, found)
      continue
    }
    const manifest = readManifest(child)
    if (manifest && manifest.name === name) found.push(`${manifest.version} in ${path.relative(ROOT, child)}`)
    installed(path.join(child, 'node_modules'), name, found)
  }
  return found
}

function readManifest (dir) {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
  } catch {
    return null
  }
}

test('the installed tree holds one mongodb, and it is the one mongoose loads', () => {
  const copies = installed(path.join(ROOT, 'node_modules'), 'mongodb')
  assert.equal(copies.length, 1, `mongodb is installed ${copies.length} times: ${copies.join('; ')} (align package.json's mongodb range with mongoose's)`)
  const ours = require.resolve('mongodb', { paths: [ROOT] })
  const mongoose = require.resolve('mongodb', { paths: [path.dirname(require.resolve('mongoose/package.json', { paths: [ROOT] }))] })
  assert.equal(ours, mongoose)
})

test('the walk finds a second copy where there is one', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collector-tree-'))
  t.after(() => removeDir(dir))
  for (const where of ['mongodb', path.join('mongoose', 'node_modules', 'mongodb'), path.join('@scope', 'tool', 'node_modules', 'mongodb')]) {
    fs.mkdirSync(path.join(dir, where), { recursive: true })
    fs.writeFileSync(path.join(dir, where, 'package.json'), JSON.stringify({ name: 'mongodb', version: '7.0.0' }))
  }
  fs.writeFileSync(path.join(dir, 'mongoose', 'package.json'), JSON.stringify({ name: 'mongoose', version: '9.0.0' }))
  fs.mkdirSync(path.join(dir, '@scope', 'tool'), { recursive: true })
  fs.writeFileSync(path.join(dir, '@scope', 'tool', 'package.json'), JSON.stringify({ name: '@scope/tool', version: '1.0.0' }))
  assert.equal(installed(dir, 'mongodb').length, 3)
})
