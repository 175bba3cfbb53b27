'use strict'
// The layout docs/concepts.md's folder table describes: lib/ is the runtime
// and imports nothing above it (workers/, configs/, collectors/, the
// application layer app/ and bin/), not even through a computed path;
// configs/ files stay small; the worker process's code never reaches into
// the master's.
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

const ABOVE_LIB = ['workers', 'configs', 'collectors', 'app', 'bin']
// lib/collector/ is the framework's top: it makes a collector of the
// master (lib/master), its workers (workers/) and its flags (configs/).
const COMPOSER = path.join(ROOT, 'lib', 'collector') + path.sep

test('nothing under lib/ imports from workers/, configs/, collectors/, app/ or bin/, but lib/collector/ from workers/ and configs/', () => {
  const found = []
  for (const file of jsFiles(path.join(ROOT, 'lib'))) {
    const above = file.startsWith(COMPOSER) ? ['collectors', 'app', 'bin'] : ABOVE_LIB
    const upward = above.map((d) => path.join(ROOT, d) + path.sep)
    for (const target of requiresOf(file)) {
      if (upward.some((dir) => target.startsWith(dir))) found.push(`${path.relative(ROOT, file)} → ${path.relative(ROOT, target)}`)
    }
  }
  assert.deepEqual(found, [])
})

test('collectors/ holds collectors only: each a folder with its definition (index.js), and nothing of the framework imports one', () => {
  const entries = fs.readdirSync(path.join(ROOT, 'collectors'), { withFileTypes: true })
  assert.deepEqual(entries.filter((e) => !e.isDirectory()).map((e) => e.name), [], 'no framework file beside the collectors')
  for (const e of entries) assert.ok(fs.existsSync(path.join(ROOT, 'collectors', e.name, 'index.js')), `collectors/${e.name}/index.js`)
  const collectors = path.join(ROOT, 'collectors') + path.sep
  const found = []
  for (const dir of ['lib', 'workers', 'configs', 'exceptions']) {
    for (const file of jsFiles(path.join(ROOT, dir))) {
      for (const target of requiresOf(file)) if (target.startsWith(collectors)) found.push(`${path.relative(ROOT, file)} → ${path.relative(ROOT, target)}`)
    }
  }
  assert.deepEqual(found, [])
})

test('the package exports every built-in collector by its folder', () => {
  const { exports } = require('../../package.json')
  for (const name of fs.readdirSync(path.join(ROOT, 'collectors'))) {
    assert.equal(exports[`./collectors/${name}`], `./collectors/${name}/index.js`, name)
  }
})

test('one file per name: no two modules of the framework share a file name', () => {
  const byName = new Map()
  for (const dir of ['lib', 'workers', 'configs']) {
    for (const file of jsFiles(path.join(ROOT, dir))) {
      const name = path.basename(file)
      if (name === 'index.js') continue // a folder's entry
      byName.set(name, [...(byName.get(name) || []), path.relative(ROOT, file)])
    }
  }
  assert.deepEqual([...byName.values()].filter((files) => files.length > 1), [])
})

test('configs/ (the argv engine) imports nothing from workers/, collectors/, app/ or bin/', () => {
  const upward = ['workers', 'collectors', 'app', 'bin'].map((d) => path.join(ROOT, d) + path.sep)
  const found = []
  for (const file of jsFiles(path.join(ROOT, 'configs'))) {
    for (const target of requiresOf(file)) {
      if (upward.some((dir) => target.startsWith(dir))) found.push(`${path.relative(ROOT, file)} → ${path.relative(ROOT, target)}`)
    }
  }
  assert.deepEqual(found, [])
})

// A require of a computed path, or a path built from __dirname that leaves
// lib/, would get round the test above. The ones lib/ needs are listed with
// why: anything else fails.
const COMPUTED_REQUIRES = {
  'lib/worker/load-worker.js': 'the user\'s worker module, by the path the user gave',
  'lib/protocols/native-udp-socket.js': 'the native receive addon built on install (native/, not code above lib/)',
  'lib/worker/heap-trim.js': 'the workers\' malloc_trim addon built on install (native/, not code above lib/)'
}
const PATHS_OUT_OF_LIB = {
  'lib/mongo/java-build.js': 'java/: the embedded server\'s sources and jars, built and run as a process'
}

test('lib/ reaches nothing above it through a computed require or a path out of lib/', () => {
  const found = []
  for (const file of jsFiles(path.join(ROOT, 'lib'))) {
    const rel = path.relative(ROOT, file)
    const text = fs.readFileSync(file, 'utf8')
    const computed = [...text.matchAll(/\brequire\(\s*(?!['"][^'"]*['"]\s*\))/g)]
    if (computed.length > 0 && !COMPUTED_REQUIRES[rel]) found.push(`${rel}: require of a computed path`)
    for (const m of text.matchAll(/path\.(?:join|resolve)\(\s*__dirname\s*((?:,\s*'[^']*'\s*)+)\)/g)) {
      const parts = [...m[1].matchAll(/'([^']*)'/g)].map((p) => p[1])
      const target = path.resolve(path.dirname(file), ...parts)
      if (!target.startsWith(path.join(ROOT, 'lib') + path.sep) && !PATHS_OUT_OF_LIB[rel]) found.push(`${rel}: path to ${path.relative(ROOT, target)}`)
    }
  }
  assert.deepEqual(found, [])
})

test('the application layer (app/) is imported only by bin/, app/ itself, tests and benchmarks', () => {
  const app = path.join(ROOT, 'app') + path.sep
  const found = []
  for (const dir of ['lib', 'workers', 'configs', 'collectors', 'exceptions']) {
    for (const file of jsFiles(path.join(ROOT, dir))) {
      for (const target of requiresOf(file)) if (target.startsWith(app)) found.push(`${path.relative(ROOT, file)} → ${path.relative(ROOT, target)}`)
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

test('the framework\'s registered symbols are declared in one file (lib/shared/symbols.js)', () => {
  const found = []
  for (const dir of ['lib', 'workers', 'configs', 'collectors', 'app']) {
    for (const file of jsFiles(path.join(ROOT, dir))) {
      const rel = path.relative(ROOT, file)
      if (rel !== path.join('lib', 'shared', 'symbols.js') && /Symbol\.for\(/.test(fs.readFileSync(file, 'utf8'))) found.push(rel)
    }
  }
  assert.deepEqual(found, [])
})

// Small files, one concept each (docs/concepts.md): the balancer composes
// its parts and stays short; no file of the framework or a collector
// grows a second job past 400 lines.
test('no file in lib/, workers/ or collectors/ is over 400 lines, lib/master/load-balancer.js over 300', () => {
  const over = []
  for (const dir of ['lib', 'workers', 'collectors']) {
    for (const file of jsFiles(path.join(ROOT, dir))) {
      const rel = path.relative(ROOT, file)
      const lines = fs.readFileSync(file, 'utf8').split('\n').length - 1
      const limit = rel === path.join('lib', 'master', 'load-balancer.js') ? 300 : 400
      if (lines > limit) over.push(`${rel}: ${lines} lines (at most ${limit})`)
    }
  }
  assert.deepEqual(over, [])
})
