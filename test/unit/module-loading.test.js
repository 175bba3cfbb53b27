'use strict'

// What each process loads is memory it keeps (a MongoDB driver is about
// 20 MB of resident set in every process that loads it): the master loads
// neither mongoose nor the driver, a worker loads one copy of the driver.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..', '..')

// The packages under node_modules a fresh process has loaded after requiring `files`.
function loadedPackages (files) {
  const script = `${files.map((f) => `require(${JSON.stringify(path.join(ROOT, f))})`).join(';')}
    const loaded = Object.keys(require.cache).filter((k) => k.includes('node_modules'))
    process.stdout.write(JSON.stringify(loaded))`
  const files_ = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }))
  return files_.map((file) => path.relative(ROOT, file))
}

const driverCopies = (loaded) => new Set(loaded.filter((f) => /(^|\/)node_modules\/mongodb\/lib\/index\.js$/.test(f)).map(path.dirname))

test('the master of a built-in collector loads neither mongoose nor the MongoDB driver', () => {
  const loaded = loadedPackages(['app/collector-entry', 'collectors/syslog', 'collectors/rtcp', 'collectors/hep', 'index.js'])
  assert.deepEqual(loaded.filter((f) => /node_modules\/(mongoose|mongodb|bson|js-yaml|pino-pretty|@pm2\/io|prom-client)\//.test(f)), [])
})

test('a built-in collector still exports its Worker, loaded when asked for', () => {
  const syslog = require('../../collectors/syslog')
  assert.equal(syslog.Worker.definition, syslog.definition, 'the syslog definition\'s worker')
  const worker = new syslog.Worker({})
  assert.equal(worker.definition, syslog.definition)
  // A definition's worker is a DefinitionWorker given its definition: two levels above Worker, no class per definition.
  const chain = []
  for (let proto = Object.getPrototypeOf(worker); proto && proto.constructor !== require('../../workers/worker'); proto = Object.getPrototypeOf(proto)) chain.push(proto.constructor.name)
  assert.deepEqual(chain, ['DefinitionWorker', 'MongoWorker'])
  // A worker of one's own may extend a built-in collector's (adding to its stats): it is one of those, with the subclass's methods.
  class Counting extends syslog.Worker { stats () { return { ...super.stats(), mine: 1 } } }
  const own = new Counting({})
  assert.ok(own instanceof require('../../workers/definition-worker') && own.definition === syslog.definition)
  assert.equal(own.stats().mine, 1)
  assert.ok(Object.keys(require('../../collectors/rtcp')).includes('Worker'))
})

test('a worker of each built-in collector loads one copy of the MongoDB driver, the one mongoose uses', () => {
  const mongooseDriver = path.dirname(path.relative(ROOT, require.resolve('mongodb', { paths: [path.dirname(require.resolve('mongoose'))] })))
  // A definition's worker: its module, then its definition worker and sinks.
  for (const worker of [['collectors/syslog', 'workers/definition-worker'], ['collectors/rtcp', 'workers/definition-worker'], ['collectors/hep', 'workers/definition-worker']]) {
    const copies = driverCopies(loadedPackages(['lib/worker/worker-runtime', ...worker]))
    assert.deepEqual([...copies], [mongooseDriver], worker.join(' + '))
  }
})
