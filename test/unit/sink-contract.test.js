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
