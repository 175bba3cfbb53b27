'use strict'

// The framework's promise for a collector a user writes (issue 37): a
// message of many records stores each record once, and state a definition
// keeps (templates, as NetFlow v9 and IPFIX have them) survives the worker
// that learned it, through SIGKILLs every 500 ms, on real forked workers
// and the Java MongoDB server. test/fixtures/template-definition.js is the
// collector.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const { MongoClient } = require('mongodb')
const templated = require('../fixtures/template-definition')
const { startTestCollector } = require('../helpers/collector')
const { waitFor } = require('../helpers/wait-for')
const { killLoop, restartLoop } = require('../helpers/kill-loop')
const { accountedFor } = require('../../lib/master/counters')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { tempBufferDir } = require('../helpers/buffer-dir')
const { runCollector, withDatabase } = require('../fixtures/foreground-run')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const ROWS = 30 // records per datagram, as a NetFlow v5 datagram carries

// Sends one datagram to `port` on loopback at a time; the socket closes with the test.
// A sender to the collector on `port`, from `from` (another loopback address is another sender's scope).
function udpSender (t, port, from = null) {
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  if (from !== null) socket.bind(0, from)
  return (text) => new Promise((resolve, reject) => socket.send(text, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
}

function dataDatagram (template, first, order) {
  const rows = []
  for (let k = first; k < first + ROWS; k++) {
    const fields = { src: `10.0.0.${k % 5}`, dst: '10.1.0.1', bytes: String(100 + (k % 7)), seq: String(k) }
    rows.push(order.map((name) => fields[name]).join(';'))
  }
  return `D ${template} ${rows.join('|')}`
}

test('kept state and records: 30 records a datagram stored once each, templates surviving worker SIGKILLs every 500 ms', { timeout: 180000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, templated)
  const send = udpSender(t, port)
  // One datagram before its template: refused by name, never stored as nothing.
  await send(dataDatagram(9, 1000000, ['src', 'dst', 'bytes', 'seq']))
  const first = ['src', 'dst', 'bytes', 'seq']
  const second = ['seq', 'bytes', 'dst', 'src'] // template 1 redefined half way, in another order
  await send(`T 1 ${first.join(',')}`)
  await sleep(300)
  const datagrams = 200
  const loop = killLoop(collector, 500)
  for (let i = 0; i < datagrams; i++) {
    if (i === datagrams / 2) {
      await send(`T 1 ${second.join(',')}`)
      await sleep(20)
    }
    await send(dataDatagram(1, i * ROWS, i < datagrams / 2 ? first : second))
    await sleep(25)
  }
  const killed = await loop.stop(3)
  const s = await waitFor(async () => {
    const stats = await collector.stats()
    return stats.inFlight === 0 && accountedFor(stats) ? stats : null
  }, { timeout: 90000, what: 'every datagram processed or dropped' })
  assert.ok(killed >= 3, `workers killed: ${killed}`)
  assert.deepEqual(s.dropped.templateUnknown, 1, JSON.stringify(s.dropped))
  assert.equal(s.dropped.total, 1, JSON.stringify(s.dropped))
  assert.equal(s.processed, datagrams + 2, JSON.stringify({ received: s.received, dropped: s.dropped, kernel: s.kernel }))

  const rows = await db.collection('rows').find().toArray()
  const seqs = new Set(rows.map((row) => row.seq))
  assert.equal(rows.length, datagrams * ROWS, 'one document per record, none twice')
  assert.equal(seqs.size, datagrams * ROWS, 'every record, each once')
  for (const row of rows) {
    const k = Number(row.seq)
    assert.deepEqual([row.src, row.dst, row.bytes], [`10.0.0.${k % 5}`, '10.1.0.1', String(100 + (k % 7))], `record ${k} read by the template it was sent with`)
    assert.equal(row._id.r, k % ROWS, 'numbered by its place in its datagram')
  }
  for (const total of await db.collection('row_totals').find().toArray()) {
    const mine = rows.filter((row) => row.src === total._id)
    assert.equal(total.rows, mine.length, `${total._id}: one increment per record`)
    assert.equal(total.bytes, mine.reduce((n, row) => n + Number(row.bytes), 0))
  }
  const kept = await db.collection('templated_kept').find().toArray()
  assert.deepEqual(kept.map((doc) => [doc.scope, doc.name, doc.value.value]), [['127.0.0.1', 'template 1', second]], 'the template as last announced, kept by the framework')
})

// A scope larger than keep.maxEntries (or read while every other scope
// waits to be written) was forgotten by the read that brought it, and the
// message it was read for failed, as every later one of that scope did.
test('a scope just read is not forgotten for the message it was read for, even past maxEntries', async (t) => {
  const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
  const { MongoClient } = require('mongodb')
  const { KeptState } = require('../../workers/kept-state')
  const { uri } = await getTestMongo()
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const db = client.db(uniqueDbName('keptread'))
  const kept = new KeptState({ collection: 'k_kept', scope: () => 'a', maxEntries: 2, maxPerScope: 10 })
  await kept.prepare(db)
  await db.collection('k_kept').insertMany(['n1', 'n2', 'n3'].map((name, i) => ({ _id: `a\u0000${name}`, scope: 'a', name, value: { batch: 1, index: i, value: i + 1 } })))
  await kept.load('a')
  const view = kept.bind('a', { mark: { batchId: 2 }, index: 0, message: { receivedAt: new Date() } })
  assert.deepEqual(['n1', 'n2', 'n3'].map((name) => view.get(name)), [1, 2, 3])
  kept.settle(true)
})

// A scope with nothing kept (a datagram of garbage from each of 65,535 source
// ports) counted nothing against maxEntries and was held for good.
test('empty scopes count against maxEntries: a flood of senders with nothing kept is forgotten, not held', async (t) => {
  const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
  const { MongoClient } = require('mongodb')
  const { KeptState } = require('../../workers/kept-state')
  const { uri } = await getTestMongo()
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const kept = new KeptState({ collection: 'k_kept', scope: (m) => m.scope, maxEntries: 50, maxPerScope: 10 })
  await kept.prepare(client.db(uniqueDbName('keptempty')))
  for (let port = 0; port < 500; port++) await kept.load(`10.0.0.1|${port}`)
  const { scopes, forgotten, reads } = kept.stats()
  assert.equal(reads, 500)
  assert.ok(scopes <= 50, `${scopes} scopes held`)
  assert.equal(forgotten, 500 - scopes)
  assert.ok(kept.scopeReady({ scope: '10.0.0.1|499' }).ready, 'the latest is held')
})

// Kept state expired nowhere: an exporter gone for good (or a session's
// old source port) kept its templates forever. Retention now takes the
// scopes no message used for the retention (by `seenAt`), never one in use,
// even when its templates are not announced again.
test('retention takes the kept state of a sender gone quiet, and keeps that of one still sending that never announces again', { timeout: 120000 }, async (t) => {
  const quiet = require('../fixtures/template-definition-quiet')
  const { db, port } = await startTestCollector(t, quiet, ['--retention', '3s'])
  const sockets = ['127.0.0.1', '127.0.0.2'].map((address) => {
    const socket = dgram.createSocket('udp4')
    socket.bind(0, address)
    t.after(() => socket.close())
    return socket
  })
  await Promise.all(sockets.map((socket) => new Promise((resolve) => socket.once('listening', resolve))))
  const send = (socket, text) => new Promise((resolve, reject) => socket.send(text, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  const order = ['src', 'dst', 'bytes', 'seq']
  await send(sockets[0], `T 1 ${order.join(',')}`)
  await send(sockets[1], `T 2 ${order.join(',')}`)
  await send(sockets[1], dataDatagram(2, 0, order))
  const kept = db.collection('quiet_kept')
  await waitFor(async () => (await kept.countDocuments()) === 2, { what: 'both templates kept', timeout: 20000 })
  let sent = 1
  const until = Date.now() + 10000 // past the retention, its span (2 × seenEvery) and a sweep
  while (Date.now() < until) {
    await send(sockets[0], dataDatagram(1, sent * ROWS, order))
    sent++
    await sleep(250)
  }
  await waitFor(async () => (await kept.countDocuments({ scope: '127.0.0.2' })) === 0, { what: 'the quiet sender\'s template expired', timeout: 20000 })
  const left = await kept.find().toArray()
  assert.deepEqual(left.map((doc) => [doc.scope, doc.name]), [['127.0.0.1', 'template 1']], 'the sending one\'s template stays')
  assert.ok(Date.now() - left[0].seenAt.getTime() < 3000, `seen recently (${left[0].seenAt.toISOString()})`)
  const fromSender = { seq: { $regex: '^\\d+$' }, bytes: { $exists: true } }
  await waitFor(async () => (await db.collection('rows').countDocuments(fromSender)) === sent * ROWS, { what: `every record decoded throughout: ${sent * ROWS} (the quiet one's ${ROWS} included)`, timeout: 20000 })
})

test('a message that meets kept state already ahead of it (its own change, stored before its worker died) is told it is delivered again (arrival.redelivered)', { timeout: 180000 }, async (t) => {
  const sequenced = require('../fixtures/sequence-definition')
  const { collector, db, port } = await startTestCollector(t, sequenced)
  const send = udpSender(t, port)
  const messages = 1500
  const loop = killLoop(collector, 400)
  for (let n = 0; n < messages; n++) {
    await send(`S ${n}`)
    if (n % 10 === 9) await sleep(5)
  }
  const killed = await loop.stop(3)
  await waitFor(async () => {
    const stats = await collector.stats()
    return stats.inFlight === 0 && accountedFor(stats) && stats.processed === messages ? stats : null
  }, { timeout: 90000, what: 'every message processed' })
  assert.ok(killed >= 3, `workers killed: ${killed}`)
  assert.equal(await db.collection('sequence').countDocuments(), messages, 'each stored once')
  const ahead = await db.collection('sequence_ahead').find().toArray()
  assert.deepEqual(ahead.filter((doc) => doc._id === 'untold'), [], 'no message met state ahead of it untold')
  assert.deepEqual(await db.collection('sequence_behind').find().toArray(), [], 'no message met state behind it')
  t.diagnostic(`${killed} workers killed; a redelivered message met its own change: ${ahead.some((doc) => doc._id === 'told')}`)
})

test('rolling restarts while a sender sends: a slot\'s new worker takes nothing before the old one has stored its state, so no message meets state behind it (QA: a NetFlow exporter\'s flows refused for templates not yet written)', { timeout: 120000 }, async (t) => {
  const sequenced = require('../fixtures/sequence-definition')
  const { collector, db, port } = await startTestCollector(t, sequenced)
  // 40 senders (scopes), each its own sequence: a restarted slot's new worker reads many scopes at once.
  const senders = Array.from({ length: 40 }, (_, i) => udpSender(t, port, `127.0.0.${i + 2}`))
  const messages = 4000
  const loop = restartLoop(collector, 300)
  for (let i = 0; i < messages; i++) {
    await senders[i % senders.length](`S ${Math.floor(i / senders.length)}`)
    if (i % 20 === 19) await sleep(5)
  }
  const restarts = await loop.stop(3)
  const stats = await waitFor(async () => {
    const s = await collector.stats()
    return s.inFlight === 0 && accountedFor(s) && s.processed === messages ? s : null
  }, { timeout: 90000, what: 'every message processed' })
  assert.equal(stats.dropped.total, 0, JSON.stringify(stats.dropped))
  assert.equal(await db.collection('sequence').countDocuments(), messages, 'each stored once')
  assert.deepEqual(await db.collection('sequence_behind').find().toArray(), [], 'no message met state behind it')
  assert.deepEqual((await db.collection('sequence_ahead').find().toArray()).map((doc) => doc._id), [], 'nor ahead: nothing was delivered twice')
  t.diagnostic(`${restarts} rolling restarts`)
})

// Sends "S <n>" for n in [from, to) from each sender in turn, paced.
async function sendSequences (senders, from, to) {
  for (let n = from; n < to; n++) {
    for (const send of senders) await send(`S ${n}`)
    if (n % 5 === 4) await sleep(5)
  }
}

test('a master SIGKILLed while one slot\'s worker is stopped: the next run replays each batch on its keys\' slot, ahead of their new messages, so kept state never sees a sender\'s messages out of order (QA: gap counts ×16)', { timeout: 180000 }, async (t) => {
  const { uri } = await getTestMongo()
  const database = uniqueDbName('keptreplay')
  const env = { MONGODB_URI: withDatabase(uri, database), COLLECTOR_BUFFER_DIR: tempBufferDir(t) }
  const flags = ['-i', '2', '--flush-interval', '50ms']
  const fixture = require.resolve('../fixtures/sequence-definition')
  const first = await runCollector(t, fixture, { flags, env })
  const addresses = Array.from({ length: 16 }, (_, i) => `127.0.0.${i + 2}`)
  const sendersTo = (port) => addresses.map((address) => udpSender(t, port, address))
  const before = sendersTo(first.port)
  await sendSequences(before, 0, 40)
  await waitFor(async () => (await first.stats()).processed === 40 * addresses.length, { what: 'the first 640 stored', timeout: 30000 })
  // Slot 1's worker stops: its senders' next messages wait, unacknowledged, in the disk buffer.
  const stopped = (await first.stats()).workers.find((w) => w.slot === 1).pid
  process.kill(stopped, 'SIGSTOP')
  t.after(() => { try { process.kill(stopped, 'SIGKILL') } catch {} })
  await sendSequences(before, 40, 120)
  const total = 120 * addresses.length
  const held = await waitFor(async () => {
    const s = await first.stats()
    return s.received === total && s.inFlight > 0 && s.processed + s.buffer.messages === total ? s : null
  }, { what: 'slot 0 storing its senders, slot 1 holding its own on disk', timeout: 30000 })
  await sleep(1500) // the buffer's list of what was released written since: the next run replays slot 1's batches alone
  process.kill(first.pid, 'SIGKILL')
  process.kill(stopped, 'SIGKILL')
  await first.exited
  const second = await runCollector(t, fixture, { flags, env })
  await sendSequences(sendersTo(second.port), 120, 160)
  const stats = await waitFor(async () => {
    const s = await second.stats()
    return s.inFlight === 0 && accountedFor(s) && s.processed >= s.replayed + 40 * addresses.length ? s : null
  }, { what: 'the replay and the new messages stored', timeout: 90000 })
  assert.ok(stats.replayed >= held.inFlight, `replayed ${stats.replayed}, held by the stopped worker ${held.inFlight}`)
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const db = client.db(database)
  assert.equal(await db.collection('sequence').countDocuments(), 160 * addresses.length, 'each message stored once')
  assert.deepEqual((await db.collection('sequence_behind').find().toArray()).map((doc) => doc._id), [], 'no message met state behind it')
  // Every message of a sender the second run stored (replayed or new), stored by one worker: its slot's.
  const pids = new Set(stats.workers.map((w) => w.pid))
  let replayedSenders = 0
  for (const from of addresses) {
    const docs = (await db.collection('sequence').find({ from }).toArray()).filter((doc) => pids.has(doc.pid))
    assert.equal(new Set(docs.map((doc) => doc.pid)).size, 1, `${from}: stored by ${[...new Set(docs.map((doc) => doc.pid))]}`)
    if (docs.some((doc) => doc.n < 120)) replayedSenders++
  }
  assert.ok(replayedSenders > 0, 'some sender\'s held messages were replayed')
  t.diagnostic(`replayed ${stats.replayed} messages of ${replayedSenders} senders`)
})

test('names a definition deletes (a chunked message once whole) do not stay behind as documents: purged once no older message can come again', { timeout: 120000 }, async (t) => {
  const chunked = require('../fixtures/chunk-definition')
  const { collector, db, port } = await startTestCollector(t, chunked)
  const send = udpSender(t, port)
  const messages = 300
  // Two chunks of each first, stored (a name set and deleted in one flush is never written), then the third.
  for (let id = 0; id < messages; id++) for (let part = 0; part < 2; part++) await send(`C ${id} ${part} 3 ${id}-${part};`)
  await waitFor(async () => (await db.collection('chunked_kept').countDocuments({ 'value.value.1': { $exists: true } })) === messages, { what: 'the first chunks kept' })
  for (let id = 0; id < messages; id++) await send(`C ${id} 2 3 ${id}-2;`)
  await waitFor(async () => (await db.collection('joined').countDocuments()) === messages, { what: 'every message joined and stored' })
  const joined = await db.collection('joined').find({ id: '7' }).toArray()
  assert.deepEqual(joined.map((doc) => doc.text), ['7-0;7-1;7-2;'])
  // Keep the scope in use, so that its worker comes to purge (every keep.seenEvery, at a flush).
  let left = -1
  await waitFor(async () => {
    await send(`C last-${Date.now()} 0 1 x`)
    left = await db.collection('chunked_kept').countDocuments()
    return left === 0
  }, { timeout: 30000, what: 'the deleted names purged' })
  // Counted in the worker's stats (which the master asks for now and then).
  await waitFor(async () => (await collector.stats()).workers.reduce((n, w) => n + w.custom.sinks.chunked_kept.purged, 0) >= messages, { what: 'the purge counted' })
})

test('a message the definition refuses: counted by its reason, and its text and sender said in the log once a while per reason (QA: the text was nowhere)', { timeout: 60000 }, async (t) => {
  const { captureLogger } = require('../helpers/capture-logger')
  const { logger, records } = captureLogger()
  const { collector, port } = await startTestCollector(t, templated, [], { logger })
  const send = udpSender(t, port)
  for (let i = 0; i < 5; i++) await send(dataDatagram(7, i * ROWS, ['src', 'dst', 'bytes', 'seq']))
  await send('garbage')
  await waitFor(() => collector.summary().dropped.total === 6, { what: 'six refused' })
  const { templateUnknown, badDatagram } = collector.summary().dropped
  assert.deepEqual([templateUnknown, badDatagram], [5, 1])
  const said = await waitFor(() => {
    const lines = records.filter((r) => /^refused \(/.test(r.msg))
    return lines.length >= 2 && lines
  }, { what: 'the refusals said' })
  // Once per reason: the five of one said once.
  assert.deepEqual(said.map((r) => r.msg).sort(), ['refused (badDatagram): want "T <id> <fields>" or "D <id> <rows>"', 'refused (templateUnknown): a data datagram whose template was never announced'])
  assert.ok(said.every((r) => r.fields.remote === '127.0.0.1'), 'with the sender')
})
