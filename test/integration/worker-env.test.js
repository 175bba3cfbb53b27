'use strict'
// The master→worker environment (lib/shared/ipc.js) across a real fork:
// what a forked worker sees, and the one-line error a bad environment gives.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawn, fork } = require('node:child_process')
const { once } = require('node:events')
const ipc = require('../../lib/shared/ipc')
const { fixture, startLb } = require('../helpers/lb')

const WORKER_ENTRY = path.join(__dirname, '..', '..', 'lib', 'worker', 'worker-entry.js')
const PROBE = fixture('contract-probe-worker.js')

// The parent's own environment without any variable of ours.
function cleanEnv (extra = {}) {
  const env = {}
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('COLLECTOR_')) env[key] = value
  return { ...env, ...extra }
}

test('each forked worker gets the collector name, its slot and the worker options; ps shows --name and --slot', async (t) => {
  const workerOptions = { label: 'probe', nested: { depth: [1, 2, 3] } }
  const lb = await startLb(t, { name: 'probe-collector', worker: PROBE, instances: 2, workerOptions })
  const { workers } = await lb.stats()
  assert.equal(workers.length, 2)
  for (const worker of workers) {
    assert.deepEqual(worker.custom.options, workerOptions)
    assert.equal(worker.custom.collectorName, 'probe-collector')
    assert.equal(worker.custom.slot, worker.slot)
    assert.deepEqual(worker.custom.argv, ['--name', 'probe-collector', '--slot', String(worker.slot)])
  }
  assert.deepEqual(workers.map((w) => w.custom.slot).sort(), [0, 1])
})

test('a master started from `node -e` or `node -p` runs its workers, which do not run that code again', { timeout: 60000 }, async () => {
  const code = `
    const { LoadBalancer } = require(${JSON.stringify(path.join(__dirname, '..', '..'))})
    const lb = new LoadBalancer({ worker: ${JSON.stringify(PROBE)}, instances: 1, port: 0 })
    lb.start().then(() => lb.stats()).then(({ workers }) => {
      console.log('slot ' + workers[0].custom.slot + ' ' + JSON.stringify(workers[0].custom.execArgv.filter((a) => !a.startsWith('--max-semi') && !a.startsWith('--heap'))))
      return lb.stop()
    })
  `
  for (const flag of ['-e', '-pe']) {
    const child = spawn(process.execPath, [flag, code], { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { err += d })
    const [status] = await once(child, 'exit')
    assert.equal(status, 0, `${flag}: ${err}`)
    assert.match(out, /^slot 0 \[\]$/m, `${flag}: the worker ran, without the master's code flags: ${out}${err}`)
  }
})

test('workers run with the master\'s Node flags and then workersNodeArgs, which bound the young generation by default', async (t) => {
  const bounded = await startLb(t, { worker: PROBE, instances: 1 })
  const [worker] = (await bounded.stats()).workers
  const inherited = process.execArgv.filter((arg) => !arg.startsWith('--test'))
  // (cluster may append an --inspect-port of its own)
  assert.deepEqual(worker.custom.execArgv.slice(0, inherited.length + 2), [...inherited, '--max-semi-space-size=2', '--heap-growing-percent=20'])
  const unbounded = await startLb(t, { worker: PROBE, instances: 1, workersNodeArgs: ['--max-semi-space-size=0', '--heap-growing-percent=0'] })
  const [defaults] = (await unbounded.stats()).workers
  assert.deepEqual(defaults.custom.execArgv.slice(0, inherited.length + 2), [...inherited, '--max-semi-space-size=0', '--heap-growing-percent=0'])
  // 2 MiB semi-spaces: V8's new space stays at a few of them (4 MiB on Node
  // 20; Node 26 counts it by pages and was seen at 4 to 13 MiB), where V8's
  // own default lets it grow to 32 (Node 20) or 57 MiB (Node 26). How far
  // it grows within its bound varies from run to run, so the bounded one is
  // compared with V8's own in the same run, not with a fixed figure.
  const young = { bounded: worker.custom.youngGenerationMiB, defaults: defaults.custom.youngGenerationMiB }
  assert.ok(young.defaults >= 24, `V8's own young generation: ${young.defaults} MiB`)
  assert.ok(young.bounded * 2 <= young.defaults, `young generation ${young.bounded} MiB, V8's own ${young.defaults} MiB`)
})

test('a worker entry started by hand says what is missing in one line, with its code, and exits 1', async () => {
  const child = spawn(process.execPath, [WORKER_ENTRY], { env: cleanEnv(), stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk) => { stderr += chunk })
  const [code] = await once(child, 'exit')
  assert.equal(code, 1)
  assert.equal(stderr, 'collector-cluster worker: ERR_WORKER_DOWN: worker environment: COLLECTOR_WORKER_MODULE is missing (the master sets it when it forks the worker)\n')
})

test('a malformed variable reaches the master as INIT_FAILED naming it, and the worker exits 1', async () => {
  const env = cleanEnv(ipc.workerEnv({ module: PROBE, options: {}, collectorName: 'probe', slot: 0, logLevel: 0 }))
  env[ipc.WORKER_ENV.slot] = 'first'
  const child = fork(WORKER_ENTRY, [], { env, serialization: 'advanced', stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
  const messages = []
  child.on('message', (message) => messages.push(message))
  const [code] = await once(child, 'exit')
  assert.equal(code, 1)
  assert.deepEqual(messages, [[ipc.INIT_FAILED, 'worker environment: COLLECTOR_WORKER_SLOT must be an integer from 0 to 9007199254740991, got "first"', null, 'ERR_WORKER_DOWN']])
})
