'use strict'
// A worker module that does not load says where: the file and line at fault
// reach LoadBalancer.start()'s rejection (and its `file`/`line`), the
// foreground `collector run`, and a `collector start` under PM2. The broken
// modules are written at test time (a file with a syntax error in
// test/fixtures would fail the lint).
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { LoadBalancer, WorkerDownError, InvalidOptionError } = require('../..')
const { runCli: cli } = require('../helpers/cli')
const { pm2Home } = require('../helpers/pm2-home')

const ECHO = path.join(__dirname, '..', 'fixtures', 'echo-collector.js')
const WORKER_CLASS = "require('" + path.join(__dirname, '..', '..').replace(/\\/g, '/') + "').Worker"
const { removeDir } = require('../helpers/temp-dir')

/** Writes `files` ({ name: source }) into a temporary directory; returns its path. */
function modules (t, files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collector-badworker-'))
  t.after(() => removeDir(dir))
  for (const [name, source] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), source)
  return dir
}

/** The rejection of start() with `worker`, after checking it is a WorkerDownError and nothing listens. */
async function startFailure (t, worker) {
  const lb = new LoadBalancer({ worker, instances: 2, port: 0, host: '127.0.0.1' })
  t.after(() => lb.stop())
  let failure
  await assert.rejects(lb.start(), (err) => { failure = err; return true })
  assert.equal(lb.address(), null)
  return failure
}

const SYNTAX = `'use strict'\nmodule.exports = class extends ${WORKER_CLASS} {\n  doWork () {\n    }}\n  }\n}\n`

test('a syntax error in the worker module: start() rejects with ERR_WORKER_DOWN naming its file and line', async (t) => {
  const file = path.join(modules(t, { 'worker.js': SYNTAX }), 'worker.js')
  const err = await startFailure(t, file)
  assert.ok(err instanceof WorkerDownError)
  assert.equal(err.code, 'ERR_WORKER_DOWN')
  assert.equal(err.message, `worker failed to start: ${file}:5: SyntaxError: Unexpected token '}'`)
  assert.equal(err.file, file)
  assert.equal(err.line, 5)
})

test('a throw while the module loads, in it or in a module it requires: the line of the throw', async (t) => {
  const dir = modules(t, {
    'throws.js': "'use strict'\nconst limit = Number('x')\nif (Number.isNaN(limit)) throw new RangeError('limit is not a number')\nmodule.exports = {}\n",
    'uses-helper.js': "'use strict'\nconst helper = require('./helper')\nmodule.exports = { doWork () { helper() } }\n",
    'helper.js': "'use strict'\n\nnull.call()\nmodule.exports = () => {}\n"
  })
  const own = await startFailure(t, path.join(dir, 'throws.js'))
  assert.equal(own.message, `worker failed to start: ${path.join(dir, 'throws.js')}:3: RangeError: limit is not a number`)
  const nested = await startFailure(t, path.join(dir, 'uses-helper.js'))
  assert.equal(nested.message, `worker failed to start: ${path.join(dir, 'helper.js')}:3: TypeError: Cannot read properties of null (reading 'call')`)
  assert.deepEqual([nested.file, nested.line], [path.join(dir, 'helper.js'), 3])
})

test('a throw in the worker\'s constructor, and a require of a module that is not installed: the line in the worker module', async (t) => {
  const dir = modules(t, {
    'constructor.js': `'use strict'\nmodule.exports = class extends ${WORKER_CLASS} {\n  constructor (options) {\n    super(options)\n    if (!options.table) throw new Error('options.table is required')\n  }\n\n  doWork () {}\n}\n`,
    'missing-dep.js': "'use strict'\n\nconst client = require('no-such-package-anywhere')\nmodule.exports = { doWork () { client() } }\n"
  })
  const built = await startFailure(t, path.join(dir, 'constructor.js'))
  assert.equal(built.message, `worker failed to start: ${path.join(dir, 'constructor.js')}:5: Error: options.table is required`)
  const missing = await startFailure(t, path.join(dir, 'missing-dep.js'))
  assert.equal(missing.message, `worker failed to start: ${path.join(dir, 'missing-dep.js')}:3: Error: Cannot find module 'no-such-package-anywhere'`)
})

test('a module that exports no worker: the file, and what it exports instead', async (t) => {
  const dir = modules(t, {
    'named.js': `'use strict'\nexports.LineCounter = class extends ${WORKER_CLASS} {\n  doWork () {}\n}\n`,
    'empty.js': "'use strict'\n"
  })
  const named = await startFailure(t, path.join(dir, 'named.js'))
  assert.equal(named.message, `worker failed to start: option "worker" must export a Worker subclass, an object with doWork(), or a factory returning one (it exports an object with LineCounter and no doWork()), got ${JSON.stringify(path.join(dir, 'named.js'))}`)
  const empty = await startFailure(t, path.join(dir, 'empty.js'))
  assert.match(empty.message, /\(it exports an empty object\), got ".*empty\.js"$/)
  assert.ok(empty instanceof WorkerDownError && !(empty instanceof InvalidOptionError), 'the master raises WorkerDownError whatever the worker threw')
})

test('an ES module worker with a syntax error: its file and line too (Node gives none for ES modules; node --check finds it)', async (t) => {
  const file = path.join(modules(t, { 'worker.mjs': 'export default class {\n  doWork () {}\n  }\n}\n' }), 'worker.mjs')
  const err = await startFailure(t, file)
  assert.equal(err.message, `worker failed to start: ${file}:4: SyntaxError: Unexpected token '}'`)
})

test('collector run in the foreground (its log), and collector start under PM2 (its stderr and the PM2 log): the file and line', { timeout: 120000 }, async (t) => {
  const worker = path.join(modules(t, { 'worker.js': SYNTAX }), 'worker.js')
  const expected = `worker failed to start: ${worker}:5: SyntaxError: Unexpected token '}'`
  const home = pm2Home(t)
  const env = { ...process.env, PM2_HOME: home, COLLECTOR_STATS_DIR: path.join(home, 'stats') }
  const run = await cli(env, 'run', ECHO, '--name', 'broken-fg', '--port', '0', '-w', worker, '--log-format', 'json')
  assert.equal(run.code, 1)
  const fatal = run.stdout.trim().split('\n').map((l) => JSON.parse(l)).find((r) => r.level === 60)
  assert.deepEqual(fatal.error, { type: 'WorkerDownError', code: 'ERR_WORKER_DOWN', message: expected })
  const start = await cli(env, 'start', ECHO, '--name', 'broken-pm2', '--port', '0', '-w', worker)
  assert.equal(start.code, 1)
  assert.equal(start.stderr, `collector: ${expected}\n`)
  const logs = fs.readdirSync(path.join(home, 'logs')).map((f) => fs.readFileSync(path.join(home, 'logs', f), 'utf8')).join('')
  assert.ok(logs.includes(`collector failed to start: ${expected}`), logs)
})
