'use strict'
// The layout the README's "Concepts" table describes: nothing under lib/
// imports from workers/, configs/ or collectors/; configs/ files stay small;
// the master's option declarations never reach into the worker process.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const ROOT = path.join(__dirname, '..', '..')

function jsFiles (dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) return jsFiles(p)
    return e.name.endsWith('.js') ? [p] : []
  })
}

function requiresOf (file) {
  const text = fs.readFileSync(file, 'utf8')
  return [...text.matchAll(/require\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g)].map((m) => path.resolve(path.dirname(file), m[1]))
}

test('nothing under lib/ imports from workers/, configs/ or collectors/', () => {
  const upward = ['workers', 'configs', 'collectors'].map((d) => path.join(ROOT, d) + path.sep)
  const found = []
  for (const file of jsFiles(path.join(ROOT, 'lib'))) {
    for (const target of requiresOf(file)) {
      if (upward.some((dir) => target.startsWith(dir))) found.push(`${path.relative(ROOT, file)} → ${path.relative(ROOT, target)}`)
    }
  }
  assert.deepEqual(found, [])
})

test('the worker process\'s code does not import the master\'s', () => {
  const master = path.join(ROOT, 'lib', 'master') + path.sep
  const found = []
  for (const file of jsFiles(path.join(ROOT, 'lib', 'worker'))) {
    for (const target of requiresOf(file)) if (target.startsWith(master)) found.push(path.relative(ROOT, file))
  }
  assert.deepEqual(found, [])
})

test('no file in configs/ is over 200 lines', () => {
  for (const file of jsFiles(path.join(ROOT, 'configs'))) {
    const lines = fs.readFileSync(file, 'utf8').split('\n').length
    assert.ok(lines <= 200, `${path.relative(ROOT, file)}: ${lines} lines`)
  }
})

test('the npm package ships what the README points at: LICENSE, examples/, every relative link; package.json names its repository', () => {
  const { execFileSync } = require('node:child_process')
  const [pack] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }))
  const shipped = new Set(pack.files.map((f) => f.path))
  assert.ok(shipped.has('LICENSE'))
  assert.ok(shipped.has('examples/metrics-collector/index.js'))
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')
  const links = [...readme.matchAll(/\]\((?!https?:|#)([^)\s]+)\)/g)].map((m) => m[1].replace(/\/$/, ''))
  assert.ok(links.length > 0)
  for (const link of links) {
    assert.ok([...shipped].some((f) => f === link || f.startsWith(`${link}/`)), `the README links ${link}, which the package does not ship`)
  }
  const pkg = require('../../package.json')
  for (const field of ['repository', 'homepage', 'bugs', 'license']) assert.ok(pkg[field], `package.json has ${field}`)
})
