'use strict'

// A definition's warm hook (docs/writing-collectors.md): each worker runs it
// once its database is prepared and before its first message, so that the
// state enrich reads starts from what the database holds; a warm-up that
// never ends or fails holds messages 3 s at most. Real forked workers and
// the Java MongoDB server.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const { MongoClient } = require('mongodb')
const warmed = require('../fixtures/warm-definition')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { tempBufferDir } = require('../helpers/buffer-dir')
const { waitFor } = require('../helpers/wait-for')
const { captureLogger } = require('../helpers/capture-logger')

async function run (t, database, argv = [], logger = undefined, uri = undefined) {
  if (uri === undefined) uri = (await getTestMongo()).uri
  const config = new warmed.Config(['--port', '0', '-i', '1', '--database', database, '--flush-interval', '50ms', '--buffer-dir', tempBufferDir(t), ...argv]).getConfig()
  const collector = new warmed.Collector({ ...config, ...(logger ? { logger } : {}), workerOptions: { mongoUri: uri } })
  await collector.start()
  const socket = dgram.createSocket('udp4')
  const send = (text) => new Promise((resolve, reject) => socket.send(text, collector.address().port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  const stop = async () => { socket.close(); await collector.stop() }
  t.after(() => stop().catch(() => {}))
  return { collector, send, stop }
}

test('warm: each worker reads before its first message what the database holds; the lines it stores carry what it read', { timeout: 60000 }, async (t) => {
  const database = uniqueDbName('warm')
  const client = await new MongoClient((await getTestMongo()).uri).connect()
  t.after(() => client.close())
  const lines = client.db(database).collection('lines')
  const first = await run(t, database)
  await first.send('one')
  await first.send('two')
  await waitFor(async () => (await lines.countDocuments()) === 2, { what: 'the first run\'s lines stored' })
  await first.stop()
  const second = await run(t, database)
  await second.send('three') // sent at once: the worker waits for its warm-up
  await waitFor(async () => (await lines.countDocuments()) === 3, { what: 'the second run\'s line stored' })
  assert.deepEqual((await lines.find().sort({ text: 1 }).toArray()).map((doc) => [doc.text, doc.before]), [['one', 0], ['three', 2], ['two', 0]])
})

test('warm: one that never ends holds messages 3 s, said once; one that fails is said and holds none', { timeout: 60000 }, async (t) => {
  const database = uniqueDbName('warmhang')
  const client = await new MongoClient((await getTestMongo()).uri).connect()
  t.after(() => client.close())
  const lines = client.db(database).collection('lines')
  const { logger, records } = captureLogger()
  const hung = await run(t, database, ['--warm', 'hang'], logger)
  const sentAt = Date.now()
  await hung.send('waits')
  await waitFor(async () => (await lines.countDocuments()) === 1, { what: 'the line stored once the wait ran out', timeout: 20000 })
  const waited = Date.now() - sentAt
  assert.ok(waited >= 2000, `held until the warm-up's bound (${waited} ms)`)
  assert.deepEqual((await lines.findOne()).before, null, 'nothing read')
  await hung.stop()
  const failed = await run(t, uniqueDbName('warmfail'), ['--warm', 'fail'], logger)
  const started = Date.now()
  await failed.send('goes on')
  await waitFor(() => failed.collector.summary().processed === 1, { what: 'the line processed' })
  assert.ok(Date.now() - started < 2000, 'a failed warm-up holds nothing')
  const said = records.map((line) => line.msg).filter((msg) => /warm-up/.test(msg))
  assert.ok(said.some((msg) => /warm-up: still reading after 3000 ms; messages go on without it$/.test(msg)), said.join(' | '))
  assert.ok(said.some((msg) => /warm-up failed \(no such thing\)/.test(msg)), said.join(' | '))
})

test('warm: a database not there within the 3 s messages wait still gets its read once it is, and what follows carries it', { timeout: 60000 }, async (t) => {
  const { createTcpProxy } = require('../helpers/tcp-proxy')
  const { uri } = await getTestMongo()
  const target = new URL(uri)
  const proxy = await createTcpProxy({ targetPort: Number(target.port) })
  t.after(() => proxy.close())
  proxy.cut({ mode: 'hold' })
  const database = uniqueDbName('warmlate')
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const lines = client.db(database).collection('lines')
  await lines.insertOne({ text: 'before', before: null })
  const { logger, records } = captureLogger()
  const late = await run(t, database, [], logger, proxy.uri)
  await late.send('while away')
  await new Promise((resolve) => setTimeout(resolve, 4000))
  proxy.restore()
  await waitFor(() => records.some((line) => /warm-up: read back/.test(line.msg)), { what: 'the warm-up run once the database is there', timeout: 30000 })
  await late.send('after')
  await waitFor(async () => (await lines.countDocuments()) === 3, { what: 'both lines stored', timeout: 30000 })
  const byText = Object.fromEntries((await lines.find().toArray()).map((doc) => [doc.text, doc.before]))
  assert.deepEqual(byText, { before: null, 'while away': null, after: 1 }, 'the line that waited 3 s went on unread; the one after carries the read')
  assert.ok(records.some((line) => /warm-up: the database not ready after 3000 ms; messages go on without it, and it runs once the database is there/.test(line.msg)))
})
