'use strict'

// The environment the master forks each worker with (lib/shared/ipc.js):
// what the master builds, the worker reads back; anything missing or
// malformed is one ERR_WORKER_DOWN line naming the variable.
const test = require('node:test')
const assert = require('node:assert')
const ipc = require('../../lib/shared/ipc')
const { OPTIONS } = require('../../lib/master/options')
const { LEVELS } = require('../../lib/shared/logger')

const CONTRACT = { module: '/srv/my-worker.js', options: { uri: 'x', depth: [1, 2] }, collectorName: 'rtcp-1', slot: 3, logLevel: 2, listen: null, progress: null }
const LISTEN = { host: '127.0.0.1', port: 5140, udpReceiver: 'auto', recvBufferSize: 8388608, batchDelay: 2, maxInFlight: 100000 }

test('what the master builds the worker reads back, field for field', () => {
  for (const contract of [CONTRACT, { ...CONTRACT, listen: LISTEN }, { ...CONTRACT, progress: { file: '/tmp/collector-progress-1-x/1' } }]) {
    const env = ipc.workerEnv(contract)
    for (const value of Object.values(env)) assert.equal(typeof value, 'string', 'process environments hold strings only')
    assert.deepStrictEqual(ipc.readWorkerEnv(env), contract)
  }
})

test('the master sets every variable of the contract and no other', () => {
  assert.deepStrictEqual(Object.keys(ipc.workerEnv(CONTRACT)).sort(), Object.values(ipc.WORKER_ENV).sort())
})

test('no worker variable can be mistaken for an option\'s environment name', () => {
  const optionEnvs = Object.values(OPTIONS).map((decl) => decl.env).filter(Boolean)
  assert.ok(optionEnvs.includes('COLLECTOR_NAME'), 'the table derives env names (guards this test against a renamed field)')
  for (const variable of Object.values(ipc.WORKER_ENV)) {
    assert.ok(variable.startsWith(ipc.WORKER_ENV_PREFIX), `${variable} is under ${ipc.WORKER_ENV_PREFIX}`)
    assert.ok(!optionEnvs.includes(variable), `${variable} is also an option's env`)
  }
  // Reserved as a whole, so a flag added later cannot take one either.
  for (const env of optionEnvs) assert.ok(!env.startsWith(ipc.WORKER_ENV_PREFIX), `option env ${env} uses the worker prefix`)
})

test('a missing variable is named, one line, code ERR_WORKER_DOWN', () => {
  for (const variable of Object.values(ipc.WORKER_ENV)) {
    for (const absent of [undefined, '']) {
      const env = { ...ipc.workerEnv(CONTRACT), [variable]: absent }
      if (absent === undefined) delete env[variable]
      assert.throws(() => ipc.readWorkerEnv(env), (err) => {
        assert.equal(err.code, 'ERR_WORKER_DOWN')
        assert.equal(err.variable, variable)
        assert.match(err.message, new RegExp(`^worker environment: ${variable} is missing`))
        assert.ok(!err.message.includes('\n'))
        return true
      })
    }
  }
})

test('malformed values are refused with the value in the message', () => {
  const cases = [
    ['options', '{"uri":', /COLLECTOR_WORKER_OPTIONS is not JSON/],
    // The text itself is never quoted: workerOptions may hold a credential.
    ['options', '{"uri":"mongodb://user:secret@db" x}', /^worker environment: COLLECTOR_WORKER_OPTIONS is not JSON \(at character \d+\)$/],
    ['options', 'mongodb://user:secret@db', /^worker environment: COLLECTOR_WORKER_OPTIONS is not JSON$/],
    ['options', '5', /COLLECTOR_WORKER_OPTIONS must be a JSON object, got 5/],
    ['options', 'null', /must be a JSON object, got null/],
    ['slot', '-1', /COLLECTOR_WORKER_SLOT must be an integer .*got "-1"/],
    ['slot', '1.5', /COLLECTOR_WORKER_SLOT must be an integer/],
    ['slot', 'two', /got "two"/],
    ['logLevel', String(LEVELS.length + 1), new RegExp(`COLLECTOR_WORKER_LOG_LEVEL must be an integer from 0 to ${LEVELS.length}`)],
    ['listen', '5140', /COLLECTOR_WORKER_LISTEN must be a JSON object or null, got 5140/],
    ['listen', '{"port":', /COLLECTOR_WORKER_LISTEN is not JSON/]
  ]
  for (const [key, value, pattern] of cases) {
    const env = { ...ipc.workerEnv(CONTRACT), [ipc.WORKER_ENV[key]]: value }
    assert.throws(() => ipc.readWorkerEnv(env), (err) => err.code === 'ERR_WORKER_DOWN' && pattern.test(err.message) && !err.message.includes('\n'), `${key}=${value}`)
  }
})

test('the silent level (past the last level) is accepted', () => {
  const env = ipc.workerEnv({ ...CONTRACT, logLevel: LEVELS.length })
  assert.equal(ipc.readWorkerEnv(env).logLevel, LEVELS.length)
})

test('argv names the collector by --name and the slot, for ps', () => {
  assert.deepStrictEqual(ipc.workerArgs('rtcp-1', 0), ['--name', 'rtcp-1', '--slot', '0'])
})
