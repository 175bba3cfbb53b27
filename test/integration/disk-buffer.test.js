'use strict'

// The master's disk buffer (lib/master/journal.js) end to end: an outage
// longer than the in-flight bounds, a master SIGKILLed during it, a buffer
// that fills, a journal damaged by a crash, worker kills during replay.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const fs = require('node:fs')
const path = require('node:path')
const { MongoClient } = require('mongodb')
const { LoadBalancer } = require('../..')
const syslog = require('../../collectors/syslog')
const RtcpSimulator = require('../../collectors/rtcp/simulator')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { tempBufferDir } = require('../helpers/buffer-dir')
const { captureLogger } = require('../helpers/capture-logger')
const { mountTmpfs } = require('../helpers/tmpfs')
const { killLoop } = require('../helpers/kill-loop')
const { forEachMessage } = require('../../lib/shared/batch-codec')
const { runCollector, sendNumbered, countLines, withDatabase, waitFor } = require('../fixtures/foreground-run')

const HOLDING_WORKER = path.join(__dirname, '..', 'fixtures', 'buffering-worker.js')

/** Sends `<tag> <i>` for i in [from, to) over UDP, paced so that the kernel drops none. */
async function sendLines (port, tag, from, to, line = (i) => `${tag} ${i}`) {
  const socket = dgram.createSocket('udp4')
  try {
    for (let i = from; i < to; i++) {
      await new Promise((resolve, reject) => socket.send(line(i), port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
      if (i % 100 === 99) await new Promise((resolve) => setTimeout(resolve, 2))
    }
  } finally {
    socket.close()
  }
}

/** Every line the buffering workers wrote under `dir`: { key, redelivered, text }. */
function storedLines (dir) {
  return fs.readdirSync(dir).filter((f) => f.endsWith('.log')).flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean)).map((line) => {
    const [key, redelivered, ...text] = line.split(' ')
    return { key, redelivered: redelivered === '1', text: text.join(' ') }
  })
}

function segmentFiles (dir) {
  return fs.readdirSync(dir).filter((f) => f.endsWith('.ccj')).sort()
}

/** A LoadBalancer on the buffering worker: `hold` never stores (everything stays unacknowledged). */
async function holdingBalancer (t, bufferDir, outDir, { hold, holdFile, ...options }) {
  const lb = new LoadBalancer({ worker: HOLDING_WORKER, instances: 2, buffer: true, bufferDir, drainTimeout: 5000, workerOptions: { dir: outDir, hold, holdFile, storeEveryMs: 20 }, ...options })
  t.after(() => lb.stop())
  await lb.start()
  return lb
}

function tempDir (t) {
  return tempBufferDir(t) // any private temporary directory will do
}

// A syslog collector on a buffer of its own, its database then paused (an
// outage); `server` is null with MONGODB_URI (a server the test cannot pause).
async function runDuringOutage (t, prefix) {
  const { uri, server } = await getTestMongo()
  if (!server) return { server }
  const database = uniqueDbName(prefix)
  const bufferDir = path.join(tempDir(t), 'buffer')
  const env = { MONGODB_URI: withDatabase(uri, database), COLLECTOR_BUFFER_DIR: bufferDir }
  const flags = ['-i', '2', '--max-in-flight', '1000', '--max-pending', '1000', '--flush-interval', '50ms']
  const first = await runCollector(t, 'syslog', { flags, env })
  server.pause()
  t.after(() => server.resume())
  return { uri, server, database, bufferDir, env, flags, first }
}

test('the issue\'s scenario: bounds 1,000, database stalled, 12,000 syslog lines, master SIGKILLed, database back, collector started again: 12,000 stored once', { timeout: 240000 }, async (t) => {
  const { uri, server, database, bufferDir, env, flags, first } = await runDuringOutage(t, 'bufkill')
  if (!server) return t.skip('MONGODB_URI given: the test cannot pause a server it did not start')
  await sendNumbered(first, 'line', 12000)
  // Every line in the buffer: a batch is written when it is formed, up to
  // batchDelay (or BACKLOG_BATCH_DELAY_MS while batches wait) after its
  // first line; a master killed before that loses the batch being filled.
  await waitFor(async () => { const s = await first.stats(); return s.inFlight + s.buffered === 12000 && s.buffer.messages === 12000 }, { what: 'every line held or buffered, and on disk', timeout: 30000 })
  const before = await first.stats()
  assert.equal(before.dropped.total, 0, 'nothing dropped at the door while the database is away')
  assert.ok(before.buffered >= 12000 - 2 * 1000 - 2 * 256, `beyond the in-flight bounds the lines wait in the buffer (${before.buffered})`)
  process.kill(first.pid, 'SIGKILL') // the master only: its workers are left to fend for themselves
  await first.exited
  server.resume()
  const second = await runCollector(t, 'syslog', { flags, env })
  try {
    await waitFor(async () => await countLines(uri, database, 'line') === 12000, { what: '12,000 distinct lines stored', timeout: 120000 })
  } catch (err) {
    const s = await second.stats()
    t.diagnostic(`stored ${await countLines(uri, database, 'line')}; second run: ${JSON.stringify({ received: s.received, replayed: s.replayed, processed: s.processed, failed: s.failed, inFlight: s.inFlight, buffered: s.buffered, dropped: s.dropped, buffer: s.buffer, workers: s.workers })}`)
    throw err
  }
  const stats = await second.stats()
  assert.equal(stats.replayed, 12000, 'every line of the killed run was in the buffer and replayed')
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const stored = await client.db(database).collection('syslog').countDocuments({ message: /^line / })
  if (stored !== 12000) {
    // Which line, under which keys (batch id, run id, index: batch-ids.js).
    const twice = await client.db(database).collection('syslog').aggregate([{ $match: { message: /^line / } }, { $group: { _id: '$message', n: { $sum: 1 }, ids: { $push: '$_id' } } }, { $match: { n: { $gt: 1 } } }]).toArray()
    t.diagnostic(`stored more than once: ${JSON.stringify(twice.slice(0, 5).map((d) => ({ line: d._id, keys: d.ids.map(String) })))}`)
  }
  assert.equal(stored, 12000, 'each stored once')
  await waitFor(async () => { const s = await second.stats(); return s.processed === 12000 && s.buffer.messages === 0 }, { what: 'the replay acknowledged', timeout: 60000 })
  process.kill(second.pid, 'SIGINT')
  const { code } = await second.exited
  assert.equal(code, 0)
  assert.deepEqual(segmentFiles(bufferDir), [], 'a drained stop leaves no segment behind')
})

// After a crash the whole segment came back: every line of it stored
// before counted again (processed, refused by reason), every cap decided
// again. The lists of records not released are written every second.
test('a master SIGKILLed during an outage: the next run replays what was not stored, not the lines of the same segment stored before it', { timeout: 240000 }, async (t) => {
  const { uri, server, database, env, flags, first } = await runDuringOutage(t, 'bufcrash')
  if (!server) return t.skip('MONGODB_URI given: the test cannot pause a server it did not start')
  server.resume()
  await sendNumbered(first, 'before', 300)
  await waitFor(async () => { const s = await first.stats(); return s.processed === 300 && s.buffer.messages === 0 }, { what: '300 stored and released', timeout: 30000 })
  await new Promise((resolve) => setTimeout(resolve, 1500)) // a list written since
  server.pause()
  await sendNumbered(first, 'during', 200)
  await waitFor(async () => (await first.stats()).buffer.messages === 200, { what: '200 on disk', timeout: 30000 })
  process.kill(first.pid, 'SIGKILL')
  await first.exited
  server.resume()
  const second = await runCollector(t, 'syslog', { flags, env })
  await waitFor(async () => await countLines(uri, database, 'during') === 200, { what: '200 stored', timeout: 120000 })
  await waitFor(async () => { const s = await second.stats(); return s.inFlight === 0 && s.buffer.messages === 0 }, { what: 'the replay acknowledged', timeout: 60000 })
  const s = await second.stats()
  assert.deepEqual([s.replayed, s.processed], [200, 200], 'the lines left, not the segment\'s 500')
  assert.equal(await countLines(uri, database, 'before'), 300)
  process.kill(second.pid, 'SIGINT')
  assert.equal((await second.exited).code, 0)
})

test('the buffer directory deleted during an outage: made again within a second with what it held, then the master SIGKILLed: every line stored once', { timeout: 240000 }, async (t) => {
  const { uri, server, database, bufferDir, env, flags, first } = await runDuringOutage(t, 'bufrm')
  if (!server) return t.skip('MONGODB_URI given: the test cannot pause a server it did not start')
  await sendNumbered(first, 'line', 6000)
  await waitFor(async () => { const s = await first.stats(); return s.buffer.messages === 6000 }, { what: 'every line on disk', timeout: 30000 })
  fs.rmSync(bufferDir, { recursive: true, force: true }) // a cleanup script, an operator's rm -rf
  await waitFor(async () => { const s = await first.stats(); return (s.events.bufferDirRestored || 0) === 1 }, { what: 'the directory made again', timeout: 10000 })
  assert.equal(Number.parseInt(fs.readFileSync(path.join(bufferDir, 'lock'), 'utf8'), 10), first.pid, 'its lock taken again')
  const restored = await first.stats()
  assert.equal(restored.buffer.messages, 6000, 'what it held is in the directory again')
  assert.deepEqual(restored.eventReasons.bufferDirRestored, { deleted: 1 })
  await sendNumbered(first, 'more', 2000)
  await waitFor(async () => { const s = await first.stats(); return s.buffer.messages === 8000 }, { what: 'the later lines on disk too', timeout: 30000 })
  process.kill(first.pid, 'SIGKILL')
  const { stdout, stderr } = await first.exited
  assert.match(stdout + stderr, /disk buffer: .* was deleted while the collector ran: made again, its lock taken, and 6000 messages not yet stored written into it again \(events\.bufferDirRestored\)/)
  server.resume()
  const second = await runCollector(t, 'syslog', { flags, env })
  await waitFor(async () => await countLines(uri, database, 'line') === 6000 && await countLines(uri, database, 'more') === 2000, { what: '8,000 distinct lines stored', timeout: 120000 })
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  assert.equal(await client.db(database).collection('syslog').countDocuments({ message: /^(line|more) / }), 8000, 'each stored once')
  assert.equal((await second.stats()).replayed, 8000, 'every line of the killed run came back from the directory made again')
})

/** Sends `count` reports of `simulator` from `sources` sockets (one per call side, round robin), paced. */
async function sendReports (port, simulator, count, sources = 8) {
  const sockets = Array.from({ length: sources }, () => dgram.createSocket('udp4'))
  try {
    for (let i = 0; i < count; i++) {
      const socket = sockets[simulator.cursor % sources]
      const packet = simulator.next()
      await new Promise((resolve, reject) => socket.send(packet, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
      if (i % 200 === 199) await new Promise((resolve) => setTimeout(resolve, 5))
    }
  } finally {
    for (const socket of sockets) socket.close()
  }
}

// The same outage for RTCP, with the two writers of one origin's batches at
// work together: the killed master's workers (left with up to 1,000
// reports each, flushing once the database is back) and the next run,
// started before that, replaying the same batches from the buffer. Each
// stream side's packet count is checked against what the simulator sent.
test('RTCP: database stalled, 6,000 reports, master SIGKILLed, the next run started, database back while the old workers still flush: every side\'s packet count exact', { timeout: 240000 }, async (t) => {
  const { uri, server } = await getTestMongo()
  if (!server) return t.skip('MONGODB_URI given: the test cannot pause a server it did not start')
  const database = uniqueDbName('bufkillrtcp')
  const bufferDir = path.join(tempDir(t), 'buffer')
  const env = { MONGODB_URI: withDatabase(uri, database), COLLECTOR_BUFFER_DIR: bufferDir }
  const flags = ['-i', '2', '--max-in-flight', '1000', '--max-pending', '1000', '--flush-interval', '50ms']
  const name = `rtcpkill${process.pid}`
  const first = await runCollector(t, 'rtcp', { flags, env, name })
  server.pause()
  t.after(() => server.resume())
  const calls = 200
  const sent = 6000
  const simulator = new RtcpSimulator({ streams: calls })
  await sendReports(first.port, simulator, sent)
  await waitFor(async () => { const s = await first.stats(); return s.inFlight + s.buffered === sent && s.buffer.messages === sent }, { what: 'every report held or buffered, and on disk', timeout: 30000 })
  const masterGone = new Promise((resolve) => first.child.once('exit', resolve))
  process.kill(first.pid, 'SIGKILL') // the master only: its workers keep what they hold
  await masterGone
  const second = await runCollector(t, 'rtcp', { flags, env, name })
  server.resume()
  await waitFor(async () => { const s = await second.stats(); return s.processed === sent && s.buffer.messages === 0 }, { what: 'the replay stored', timeout: 120000 })
  await first.exited // the old workers finished too
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const db = client.db(database)
  const docs = await db.collection('streams').find().toArray()
  assert.equal(docs.length, calls, 'one stream per call')
  const bySide = new Map()
  for (const d of docs) for (const side of [d.from, d.to]) bySide.set(side.ID, side)
  const wrong = simulator.expected().filter((e) => {
    const side = bySide.get(e.fromID)
    return !side || side.highestPacketNum !== e.highestPacketNum || side.packets !== e.reports
  }).map((e) => ({ side: e.fromID, sent: e.reports, stored: bySide.get(e.fromID) && bySide.get(e.fromID).packets }))
  assert.deepEqual(wrong.slice(0, 3), [], `${wrong.length} sides differ from what was sent`)
  assert.equal(docs.reduce((sum, d) => sum + d.metadata.packets, 0), sent, 'metadata.packets sums to the reports sent')
  const counted = (await db.collection('counters').find().toArray()).reduce((sum, c) => sum + c.daily, 0)
  assert.equal(counted, sent, 'the packet counter (one metric: both runs have one name) counts every report once')
  const stats = await second.stats()
  t.diagnostic(`replayed ${stats.replayed}; the replay's stream segments found stored: ${stats.workers.reduce((sum, w) => sum + ((w.custom && w.custom.streamRepeats && w.custom.streamRepeats.alreadyApplied) || 0), 0)}`)
  process.kill(second.pid, 'SIGINT')
  assert.equal((await second.exited).code, 0)
})

test('a full buffer drops the newest, counted as bufferFull; the rest is delivered exactly, oldest first', { timeout: 120000 }, async (t) => {
  const bufferDir = tempDir(t)
  const out = tempDir(t)
  const total = 400
  const line = (i) => `m${i} ${'x'.repeat(400)}`
  const lb = await holdingBalancer(t, bufferDir, out, { hold: true, maxInFlight: 10, bufferMaxBytes: 65536, distribution: 'round-robin' })
  await sendLines(lb.address().port, 'm', 0, total, line)
  await waitFor(() => lb.summary().received === total, { what: `${total} received` })
  const held = lb.summary()
  assert.equal(held.dropped.kernel, 0)
  assert.ok(held.dropped.bufferFull > 0 && held.dropped.bufferFull < total, `some refused (${held.dropped.bufferFull})`)
  assert.equal(held.dropped.total, held.dropped.bufferFull, 'and only for that reason')
  assert.ok(held.buffer.full, 'the buffer says it is full')
  await lb.stop()
  const kept = lb.summary()
  assert.equal(kept.buffered, total - kept.dropped.bufferFull, 'what was not refused stays in the buffer')
  // The batches being filled count against the bound: a burst within batchDelay went past it (to 2.5× here, at 10 ms).
  assert.ok(kept.buffer.bytes < 65536 + 1024, `the bound held: ${kept.buffer.bytes} bytes of ${kept.buffer.maxBytes}`)
  const again = await holdingBalancer(t, bufferDir, out, { hold: false })
  await waitFor(() => again.summary().processed === kept.buffered, { what: 'the replay stored' })
  await again.stop()
  const texts = new Set(storedLines(out).map((l) => l.text.split(' ')[0]))
  const expected = new Set(Array.from({ length: kept.buffered }, (_, i) => `m${i}`))
  assert.deepEqual(texts, expected, 'the oldest were kept, the newest refused')
  assert.deepEqual(segmentFiles(bufferDir), [])
})

// A stop during an outage keeps the segment that holds what was not
// stored, with records stored before the outage in it too: the next start
// replays the first alone (the list of records left that the stop wrote
// beside the segment), not the whole segment again.
test('a stop during an outage keeps what was not stored; the next start replays that alone, not the lines of the same segment stored before', { timeout: 120000 }, async (t) => {
  const bufferDir = tempDir(t)
  const out = tempDir(t)
  const holdFile = path.join(out, 'outage')
  const first = await holdingBalancer(t, bufferDir, out, { hold: false, holdFile })
  await sendLines(first.address().port, 'before', 0, 300)
  await waitFor(() => first.summary().processed === 300, { what: '300 stored' })
  fs.writeFileSync(holdFile, '') // the outage: nothing more is stored
  await sendLines(first.address().port, 'during', 0, 200)
  await waitFor(() => first.summary().received === 500, { what: '500 received' })
  await first.stop()
  const kept = first.summary()
  assert.equal(kept.buffered, 200, 'what was not stored stays in the buffer')
  assert.deepEqual(segmentFiles(bufferDir).length, 1, 'one segment holds both')
  fs.rmSync(holdFile)
  const again = await holdingBalancer(t, bufferDir, out, { hold: false })
  await waitFor(() => again.summary().processed === 200, { what: 'the replay stored' })
  const replay = again.summary()
  assert.equal(replay.replayed, 200, 'the lines left, not the segment\'s 500')
  await again.stop()
  const lines = storedLines(out)
  assert.equal(lines.length, 500, 'each line stored once')
  assert.equal(new Set(lines.map((l) => l.key)).size, 500)
  assert.deepEqual(lines.filter((l) => l.redelivered).map((l) => l.text.split(' ')[0]).sort(), Array(200).fill('during'))
  assert.deepEqual(segmentFiles(bufferDir), [])
})

// At stop the workers retire one by one: the leader's role (retention,
// the storage budget: singleton jobs) is not handed to the next, which
// would start them again for the time it has left.
test('the leader is the lowest slot, made once every slot is up; at stop no other worker is made leader', { timeout: 60000 }, async (t) => {
  const { logger, records } = captureLogger()
  const lb = await holdingBalancer(t, tempDir(t), tempDir(t), { hold: false, instances: 3, logger })
  const leaders = (from = 0) => records.slice(from).filter((r) => r.msg === 'leader: true').map((r) => r.fields.slot)
  await waitFor(() => leaders().length > 0, { what: 'a leader' })
  assert.deepEqual(records.filter((r) => /^leader: /.test(r.msg)).map((r) => [r.msg, r.fields.slot]), [['leader: true', 0]], 'slot 0, and no other first')
  const before = records.length
  await lb.stop()
  assert.deepEqual(leaders(before), [], 'no leader made while stopping')
})

test('past the memory budget, what the workers have not acknowledged waits on disk: each is sent no more than its share, the master keeps no bytes of what it sent, and everything is delivered once', { timeout: 120000 }, async (t) => {
  const bufferDir = tempDir(t)
  const out = tempDir(t)
  const total = 3000
  const line = (i) => `b${i} ${'x'.repeat(400)}`
  const memoryBudget = 160 * 1024
  const lb = await holdingBalancer(t, bufferDir, out, { hold: true, memoryBudget, distribution: 'round-robin' })
  await sendLines(lb.address().port, 'b', 0, total, line)
  await waitFor(() => lb.summary().received === total, { what: `${total} received` })
  const held = lb.summary()
  assert.equal(held.dropped.total, 0)
  assert.ok(held.buffered > 0, `past the budget they wait in the buffer (${held.buffered} of ${held.inFlight + held.buffered}, maxInFlight ${lb.options.maxInFlight})`)
  for (const handle of lb.pool.current.filter(Boolean)) {
    assert.ok(handle.bytes.value <= memoryBudget / 2 || handle.unacked.length === 1, `worker ${handle.slot}: ${handle.bytes.value} bytes sent and unacknowledged, its share ${memoryBudget / 2}`)
    assert.ok(handle.unacked.length > 0, 'it was sent some')
    assert.ok(handle.unacked.every((batch) => batch.bytes === null), 'the master keeps no bytes of a batch sent: they are on disk')
  }
  await lb.stop()
  const kept = lb.summary()
  assert.equal(kept.buffered, total, 'nothing stored: all of it stays in the buffer')
  const again = await holdingBalancer(t, bufferDir, out, { hold: false })
  await waitFor(() => again.summary().processed === total, { what: 'the replay stored' })
  await again.stop()
  const texts = storedLines(out).map((l) => l.text.split(' ')[0])
  assert.equal(texts.length, total, 'each stored once')
  assert.deepEqual(new Set(texts), new Set(Array.from({ length: total }, (_, i) => `b${i}`)))
})

test('a batch goes to its worker as where it lies in the buffer; a worker that cannot read it there ends, the batch comes again with its bytes, and so do all after it: each line stored once', { timeout: 120000 }, async (t) => {
  const bufferDir = tempDir(t)
  const out = tempDir(t)
  const lb = await holdingBalancer(t, bufferDir, out, { hold: false, instances: 1 })
  const sent = [] // what each BATCH carried: 'where' or 'bytes'
  const watch = (handle) => {
    const send = handle.clusterWorker.send.bind(handle.clusterWorker)
    handle.clusterWorker.send = (message, ...rest) => {
      if (message[0] === 1) sent.push(Buffer.isBuffer(message[2]) ? 'bytes' : 'where')
      return send(message, ...rest)
    }
  }
  watch(lb.pool.current[0])
  await sendLines(lb.address().port, 'a', 0, 200)
  await waitFor(() => lb.summary().processed === 200, { what: '200 stored' })
  assert.ok(sent.length > 0 && sent.every((what) => what === 'where'), `every batch went as where it lies (${sent.join(' ')})`)
  // The worker lets go of a segment when it has nothing left to read; the
  // master writes and reads through the descriptor it holds: renamed, the
  // segment is still the master's to use, but a worker cannot open it.
  const [segment] = segmentFiles(bufferDir)
  fs.renameSync(path.join(bufferDir, segment), path.join(bufferDir, `${segment}.elsewhere`))
  const first = lb.pool.current[0]
  sent.length = 0
  await sendLines(lb.address().port, 'b', 0, 200)
  await waitFor(() => lb.summary().processed === 400, { what: '400 stored' })
  assert.notEqual(lb.pool.current[0], first, 'the worker that could not read ended and was replaced')
  assert.equal(lb.summary().dropped.total, 0)
  assert.equal(sent[0], 'where', 'the batch it could not read went as where it lies')
  sent.length = 0
  watch(lb.pool.current[0])
  await sendLines(lb.address().port, 'c', 0, 100)
  await waitFor(() => lb.summary().processed === 500, { what: '500 stored' })
  assert.ok(sent.length > 0 && sent.every((what) => what === 'bytes'), `from then on, batches go with their bytes (${sent.join(' ')})`)
  await lb.stop()
  const texts = storedLines(out).map((l) => l.text)
  assert.equal(texts.length, 500, 'each stored once')
  const expected = [...['a', 'b'].flatMap((tag) => Array.from({ length: 200 }, (_, i) => `${tag} ${i}`)), ...Array.from({ length: 100 }, (_, i) => `c ${i}`)]
  assert.deepEqual(new Set(texts), new Set(expected))
})

test('a journal cut mid-record and with a flipped byte: the collector starts, skips the two damaged records with a count and delivers the rest', { timeout: 120000 }, async (t) => {
  const bufferDir = tempDir(t)
  const out = tempDir(t)
  const total = 600
  const lb = await holdingBalancer(t, bufferDir, out, { hold: true, batchSize: 20, batchDelay: 0 })
  await sendLines(lb.address().port, 'k', 0, total)
  await waitFor(() => lb.summary().received === total, { what: `${total} received` })
  await lb.stop()
  const [segment] = segmentFiles(bufferDir)
  const file = path.join(bufferDir, segment)
  const records = readRecords(fs.readFileSync(file))
  assert.ok(records.length >= 4, `several records (${records.length})`)
  const middle = records[Math.floor(records.length / 2)]
  const last = records[records.length - 1]
  const bytes = fs.readFileSync(file)
  bytes[middle.dataStart + 3] ^= 0x40 // a flipped bit in the middle record's data
  fs.writeFileSync(file, bytes.subarray(0, last.start + Math.floor((last.end - last.start) / 2))) // the last cut in half
  const lost = new Set([...middle.texts, ...last.texts])
  const again = await holdingBalancer(t, bufferDir, out, { hold: false })
  const s = again.summary()
  assert.equal(s.buffer.damagedRecords, 2)
  assert.equal(s.replayed, total - lost.size)
  await waitFor(() => again.summary().processed === total - lost.size, { what: 'the rest stored' })
  await again.stop()
  const texts = new Set(storedLines(out).map((l) => l.text))
  const expected = new Set(Array.from({ length: total }, (_, i) => `k ${i}`).filter((text) => !lost.has(text)))
  assert.deepEqual(texts, expected, 'everything but the two damaged records')
})

test('worker kills during a replay: every line stored exactly once', { timeout: 180000 }, async (t) => {
  const { uri, server } = await getTestMongo()
  if (!server) return t.skip('MONGODB_URI given: the test cannot pause a server it did not start')
  const database = uniqueDbName('bufreplay')
  const bufferDir = tempDir(t)
  const lines = 10000
  const start = async (extra = []) => {
    const config = new syslog.Config(['--port', '0', '-i', '2', '--database', database, '--flush-interval', '50ms', '--buffer-dir', bufferDir, ...extra]).getConfig()
    const collector = new syslog.Collector({ ...config, workerOptions: { mongoUri: uri, flushTimeout: 500 } })
    t.after(() => collector.stop())
    await collector.start()
    return collector
  }
  // A worker whose database is stopped cannot close its connection: the master kills it at drainTimeout.
  const first = await start(['--max-in-flight', '500', '--max-pending', '500', '--drain-timeout', '3s'])
  server.pause()
  t.after(() => server.resume())
  await sendLines(first.address().port, 'r', 0, lines, (i) => `<14>1 2026-11-24T10:00:00Z h app - - - r ${i}`)
  await waitFor(() => first.summary().received === lines, { what: `${lines} received` })
  await first.stop() // the workers give up at flushTimeout: what they held stays in the buffer
  server.resume()
  const stopped = first.summary()
  assert.equal(stopped.buffered, lines - stopped.processed, 'everything not stored is left in the buffer')
  assert.equal(stopped.dropped.total, 0)
  const second = await start(['--max-in-flight', '300', '--batch-size', '50'])
  const kills = killLoop(second, 250)
  await waitFor(() => second.summary().processed >= stopped.buffered, { what: 'the replay stored', timeout: 120000 })
  const killed = await kills.stop()
  await second.stop()
  assert.ok(killed > 0, 'workers were killed during the replay')
  assert.equal(await countLines(uri, database, 'r'), lines)
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  assert.equal(await client.db(database).collection('syslog').countDocuments({ message: /^r / }), lines, 'no line twice')
  t.diagnostic(`${killed} workers killed during a replay of ${stopped.buffered} lines`)
})

// The records of a segment file, read by the layout docs/disk-buffer.md
// states (magic, body length, CRC, then kind, count, id, receivedAt, slot,
// pool size, origin, batch bytes), with the texts of the datagrams each holds (read
// by the batch format's one owner, by the record's kind).
function readRecords (buf) {
  const records = []
  let offset = 0
  while (offset + 12 <= buf.length) {
    const bodyLength = buf.readUInt32BE(offset + 4)
    const body = offset + 12
    const originLength = buf[body + 25]
    const dataStart = body + 26 + originLength
    const end = body + bodyLength
    const texts = []
    forEachMessage(buf.subarray(dataStart, end), buf[body], (message) => texts.push(message.data.toString('latin1')))
    records.push({ start: offset, dataStart, end, texts })
    offset = end
  }
  return records
}

test('tcp_server with a full buffer pauses the sender instead of dropping: nothing counted as dropped, the rest waits in TCP', { timeout: 60000 }, async (t) => {
  const net = require('node:net')
  const bufferDir = tempDir(t)
  const out = tempDir(t)
  const lb = await holdingBalancer(t, bufferDir, out, { hold: true, protocol: 'tcp_server', maxInFlight: 10, bufferMaxBytes: 65536 })
  const total = 2000
  const socket = net.connect(lb.address().port, '127.0.0.1')
  t.after(() => socket.destroy())
  socket.on('error', () => {}) // the stop at the end resets a connection with data still unread
  await new Promise((resolve) => socket.once('connect', resolve))
  for (let i = 0; i < total; i++) socket.write(`t${i} ${'y'.repeat(400)}\n`)
  let last = -1
  await waitFor(() => { const now = lb.summary().received; const still = now === last && lb.summary().buffer.full; last = now; return still }, { what: 'the master to stop reading', interval: 300, timeout: 30000 })
  const s = lb.summary()
  assert.ok(s.received < total, `the sender was paused (${s.received} of ${total} read)`)
  assert.equal(s.dropped.total, 0, 'nothing dropped: TCP waits')
  assert.equal(s.received, s.inFlight + s.buffered, 'everything read is held or buffered')
})

// A buffer on a file system smaller than one segment of the default bound
// (64 MiB of 1 GiB): stored data filled it, and nothing was durable after
// (a stop during an outage dropped what it held, as no dead letter could be
// written either). Now segments fit the disk, and a segment of stored
// batches gives its room back.
test('a buffer on a 2 MiB file system: said at start, 3 MiB stored through it without a failed write, and an outage after that is kept on disk at stop', { timeout: 120000 }, async (t) => {
  const { dir: bufferDir, reason } = mountTmpfs(t, '2m')
  if (!bufferDir) return t.skip(reason)
  const out = tempDir(t)
  const holdFile = path.join(out, 'outage')
  const { logger, records } = captureLogger()
  const line = (i) => `l${i} ${'z'.repeat(300)}`
  const first = await holdingBalancer(t, bufferDir, out, { hold: false, holdFile, logger })
  const said = records.filter((r) => r.level === 'warn' && /file system has room for .* less than --buffer-max-bytes 1\.0 GiB/.test(r.msg))
  assert.equal(said.length, 1, 'one warning line at start')
  await sendLines(first.address().port, 'l', 0, 10000, line)
  await waitFor(() => first.summary().processed === 10000, { what: '10,000 stored', timeout: 60000 })
  assert.deepEqual(first.summary().events, {}, 'no failed write')
  fs.writeFileSync(holdFile, '') // the outage
  await sendLines(first.address().port, 'd', 0, 300)
  await waitFor(() => first.summary().received === 10300, { what: '10,300 received' })
  await first.stop()
  const kept = first.summary()
  assert.equal(kept.dropped.total, 0, 'nothing dropped')
  assert.equal(kept.deadLettered, 0)
  assert.equal(kept.buffered, 300, 'the outage\'s lines stay on disk for the next start')
  fs.rmSync(holdFile)
  const again = await holdingBalancer(t, bufferDir, out, { hold: false })
  await waitFor(() => again.summary().processed === 300, { what: 'the replay stored' })
  await again.stop()
  assert.equal(new Set(storedLines(out).map((l) => l.key)).size, 10300, 'every line stored once')
})

// A full disk during an outage: every batch whose write failed was kept in
// the master's memory and the buffer never said full, so the master held
// all the input (60,000 lines of 1 KB in a probe) until it ran out of
// memory. Now they count as the buffer's, at most a segment's worth.
test('a disk full during an outage: the batches it cannot take are held in memory only up to a segment, then refused as bufferFull; what was taken is stored once the outage ends', { timeout: 120000 }, async (t) => {
  const { dir: bufferDir, reason } = mountTmpfs(t, '1m')
  if (!bufferDir) return t.skip(reason)
  const out = tempDir(t)
  const holdFile = path.join(out, 'outage')
  fs.writeFileSync(holdFile, '')
  const lb = await holdingBalancer(t, bufferDir, out, { hold: false, holdFile, maxInFlight: 500 })
  const line = (i) => `f${i} ${'y'.repeat(1000)}`
  await sendLines(lb.address().port, 'f', 0, 6000, line) // 6 MB into a 1 MB file system
  await waitFor(() => lb.summary().received === 6000, { what: '6,000 received', timeout: 60000 })
  const during = lb.summary()
  assert.ok(during.events.bufferWriteFailed > 0, `the full disk was met: ${JSON.stringify(during.events)}`)
  assert.ok(during.dropped.bufferFull > 0, `refused once the memory held a segment: ${JSON.stringify(during.dropped)}`)
  assert.ok(during.inFlight + during.buffered < 6000, 'not everything held')
  fs.rmSync(holdFile)
  await waitFor(() => { const s = lb.summary(); return s.inFlight === 0 && s.buffered === 0 && s }, { what: 'the outage over, all held stored', timeout: 60000 })
  const s = lb.summary()
  assert.equal(s.processed + s.dropped.total, 6000, JSON.stringify(s.dropped))
  assert.equal(new Set(storedLines(out).map((l) => l.key)).size, s.processed, 'what was taken, stored once')
})
