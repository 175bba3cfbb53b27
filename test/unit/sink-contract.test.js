'use strict'
// The sink contract is declared once, SinkStore in index.d.ts (docs/sinks.md
// says what each member guarantees): every store is a Sink and has each
// member, so the worker calls them without asking whether they exist.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const ts = require('typescript')
const { Sink, sinkHost } = require('../../workers/sink')
const { createSink } = require('../../workers/sink-stores')
const { KeptState } = require('../../workers/kept-state')
const sinks = require('../../lib/collector/sinks')

const ROOT = path.join(__dirname, '..', '..')

function declaredMembers (name) {
  const source = ts.createSourceFile('index.d.ts', fs.readFileSync(path.join(ROOT, 'index.d.ts'), 'utf8'), ts.ScriptTarget.Latest)
  const decl = source.statements.find((s) => ts.isInterfaceDeclaration(s) && s.name.text === name)
  assert.ok(decl, `index.d.ts declares ${name}`)
  return decl.members.map((m) => m.name.text)
}

test('every store behind a sink is a Sink with every member of SinkStore', () => {
  const members = declaredMembers('SinkStore')
  assert.ok(members.length >= 10, members.join(' '))
  const host = sinkHost({ logger: null, server: null, leader: false, collectorName: 'x', connection: null })
  const stores = [
    createSink(sinks.updates({ collection: 'u', of: () => null }), {}, host),
    createSink(sinks.counters({ collection: 'c', of: () => null }), {}, host),
    createSink(sinks.documents({ collection: 'd', of: (r) => r }), {}, host),
    createSink(sinks.streams({}), { streamsCollection: 's', maxPending: 10 }, host),
    new KeptState({ collection: 'k', scope: () => '', maxEntries: 10, maxPerScope: 10 })
  ]
  for (const store of stores) {
    assert.ok(store instanceof Sink, store.constructor.name)
    for (const member of members) assert.ok(member in store, `${store.constructor.name}.${member}`)
  }
})

test('a store reaches its worker through the host only: what SinkHost declares', () => {
  const worker = { logger: 'L', server: { kind: 'mongodb' }, leader: true, collectorName: 'c', connection: 'conn', secret: 1, logAtMost: () => 'logged', flushSoon: () => 'soon', dropMessage: (r) => r }
  const host = sinkHost(worker)
  assert.deepEqual(Object.keys(host).sort(), declaredMembers('SinkHost').sort())
  assert.equal(host.secret, undefined)
  worker.leader = false
  assert.equal(host.leader, false, 'read when asked: leadership changes')
  assert.equal(host.dropMessage('why'), 'why')
})

// A server that refuses a document for a reason no state of it changes (a
// validator: mongo-java-server has none, so its reply is made here, as
// the driver gives it): given up at once, its message turned from
// processed to failed once, however many of its documents and chunks.
test('a documents sink gives up documents the server refused for good; their message is failed once, the others stored', async () => {
  const failed = []
  const logged = []
  const host = { logger: null, server: null, leader: false, flushSoon: () => null, failMessages: (seq, places) => failed.push([seq, [...places]]), logAtMost: (key, level, fields, msg) => logged.push(msg) }
  const sink = createSink(sinks.documents({ collection: 'd', of: (r) => r }), {}, host)
  let writes = 0
  sink.writer = {
    async bulkWrite (ops) {
      writes++
      const bad = ops.findIndex((op) => op.insertOne.document.bytes ? op.insertOne.document.bytes.includes(Buffer.from('bad')) : op.insertOne.document.v === 'bad')
      if (bad === -1) return { insertedCount: ops.length }
      throw Object.assign(new Error('1 refused'), { writeErrors: [{ index: bad, code: 121, errmsg: 'Document failed validation' }], result: { insertedCount: ops.length - 1 } })
    }
  }
  const context = (seq, index) => ({ seq, index, mark: `${seq}:${index}`, many: false, key: () => Buffer.alloc(12, seq * 16 + index), message: {} })
  sink.maxBatch = 2 // message 1's two refused documents fall in two chunks
  sink.accept({ v: 'ok' }, context(1, 0))
  sink.accept({ v: 'bad' }, context(1, 1))
  sink.accept({ v: 'bad' }, context(1, 1))
  sink.accept({ v: 'ok' }, context(2, 0))
  await sink.write()
  assert.equal(writes, 2)
  assert.equal(sink.size, 0)
  assert.equal(sink.oldestPending(), Infinity, 'nothing holds the acknowledgement back')
  assert.deepEqual(failed, [[1, [1]], [1, [1]]], 'message 1 of batch 1, named by each chunk (the runtime counts it once)')
  assert.deepEqual(sink.stats(), { pending: 0, stored: 2, writes: 2, splits: 0, tooLarge: 0, unstorable: 0, refused: 2 })
  assert.match(logged[0], /d inserts: the server refused 1 document for good \(121: Document failed validation\)/)
})
