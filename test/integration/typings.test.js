'use strict'
// index.d.ts is what TypeScript users compile against: it must compile under
// --strict; every file in test/types must type-check (mistakes.ts holds the
// mistakes that must not); and a collector written in TypeScript
// (test/types/ts-collector) is compiled and run with `collector run`.
const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const fs = require('node:fs')
const path = require('node:path')
const { execFile } = require('node:child_process')
const { MongoClient } = require('mongodb')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { runCollector, waitFor } = require('../fixtures/foreground-run')

const ROOT = path.join(__dirname, '..', '..')
const TSC = require.resolve('typescript/bin/tsc')
const TYPES = path.join(__dirname, '..', 'types')
const BUILD = path.join(TYPES, '.build')
const COMMON = ['--strict', '--types', 'node', '--module', 'node16', '--moduleResolution', 'node16', '--target', 'es2022']

function tsc (args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [TSC, ...args], { cwd: ROOT }, (err, stdout, stderr) => {
      resolve({ code: err ? err.code : 0, output: `${stdout}${stderr}` })
    })
  })
}

test('index.d.ts compiles under --strict', { timeout: 120000 }, async () => {
  const { code, output } = await tsc(['--noEmit', ...COMMON, 'index.d.ts'])
  assert.equal(code, 0, output)
})

test('every test/types/*.ts type-checks against the package (mistakes.ts: each marked mistake is refused)', { timeout: 120000 }, async () => {
  const files = fs.readdirSync(TYPES).filter((f) => f.endsWith('.ts')).map((f) => path.join('test', 'types', f))
  assert.ok(files.some((f) => f.endsWith('mistakes.ts')) && files.length >= 2, files.join(' '))
  const { code, output } = await tsc(['--noEmit', ...COMMON, ...files])
  assert.equal(code, 0, output)
  const directives = fs.readFileSync(path.join(TYPES, 'mistakes.ts'), 'utf8').match(/^\s*\/\/ @ts-expect-error/gm)
  assert.ok(directives.length >= 10, `${directives.length} mistakes checked`)
})

test('a collector written in TypeScript compiles and runs under `collector run`: counts land in MongoDB, a bad datagram is refused by reason', { timeout: 120000 }, async (t) => {
  const out = path.join(BUILD, 'ts-collector')
  fs.rmSync(out, { recursive: true, force: true })
  const { code, output } = await tsc([...COMMON, '--outDir', out, '--rootDir', path.join('test', 'types', 'ts-collector'), path.join('test', 'types', 'ts-collector', 'index.ts')])
  assert.equal(code, 0, output)
  const { uri } = await getTestMongo()
  const database = uniqueDbName('tally')
  const run = await runCollector(t, path.join(out, 'index.js'), { flags: ['-i', '2', '--database', database, '--flush-interval', '50ms', '--unit', 'hits'], env: { MONGODB_URI: uri } })
  const socket = dgram.createSocket('udp4')
  const sent = ['apple 3', 'apple', 'pear 2', 'Not valid!', 'pear 5']
  for (const line of sent) await new Promise((resolve, reject) => socket.send(line, run.port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  socket.close()
  await waitFor(async () => { const s = await run.stats(); return s && s.processed + s.dropped.total === sent.length && s.inFlight === 0 }, { what: 'all processed or dropped', timeout: 30000 })
  const stats = await run.stats()
  assert.equal(stats.dropped.badTally, 1)
  run.child.kill('SIGINT')
  assert.equal((await run.exited).code, 0)
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const docs = await client.db(database).collection('counters').find().toArray()
  const totals = Object.fromEntries(docs.map((d) => [d.metric, d.daily]))
  assert.deepEqual(totals, { 'apple.hits': 4, 'pear.hits': 7 })
})

// The declarations and the package agree: every value the package exports
// at run time is declared (a class, function or const) in index.d.ts, and
// every value declared there exists at run time.
test('index.d.ts declares exactly the values the package exports at run time', () => {
  const ts = require('typescript')
  const source = ts.createSourceFile('index.d.ts', fs.readFileSync(path.join(ROOT, 'index.d.ts'), 'utf8'), ts.ScriptTarget.Latest)
  const declared = new Set()
  for (const statement of source.statements) {
    const exported = (ts.getModifiers(statement) || []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword)
    if (!exported) continue
    if (ts.isClassDeclaration(statement) || ts.isFunctionDeclaration(statement)) declared.add(statement.name.text)
    if (ts.isVariableStatement(statement)) for (const d of statement.declarationList.declarations) declared.add(d.name.text)
  }
  const runtime = new Set(Object.keys(require(ROOT)))
  assert.deepEqual([...runtime].filter((name) => !declared.has(name)), [], 'exported at run time, not declared in index.d.ts')
  assert.deepEqual([...declared].filter((name) => !runtime.has(name)), [], 'declared in index.d.ts, not exported at run time')
  assert.ok(declared.has('ListenError') && declared.has('LoadBalancer') && declared.size >= 20, [...declared].join(' '))
})
