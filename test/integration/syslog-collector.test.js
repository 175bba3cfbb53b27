'use strict'

// The syslog collector end to end with util-linux `logger` as the peer, over
// UDP and over TCP (octet-counted and newline-framed), into the real server;
// plus the parser's edge cases.

const test = require('node:test')
const assert = require('node:assert/strict')
const { execFile } = require('node:child_process')
const { promisify } = require('node:util')
const syslog = require('../../collectors/syslog')
const { parseSyslog } = require('../../collectors/syslog/parser')
const { generateSyslog } = require('../../collectors/syslog/generator')
const { startTestCollector } = require('../helpers/collector')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { waitFor } = require('../helpers/streams')

const run = promisify(execFile)

function startCollector (t, extra = []) {
  return startTestCollector(t, syslog, extra)
}

function logger (port, args) {
  return run('logger', ['-n', '127.0.0.1', '-P', String(port), ...args])
}

async function stored (collector, db, n) {
  await waitFor(() => collector.summary().received === n)
  await collector.stop()
  return db.collection('syslog').find().sort({ message: 1 }).toArray()
}

test('logger over UDP: RFC 5424 and RFC 3164 parsed, stored, counted per minute', async (t) => {
  const { collector, db, port } = await startCollector(t)
  await logger(port, ['-d', '--rfc5424', '--sd-id', 'foo@123', '--sd-param', 'a="b"', '-t', 'myapp', '-p', 'local3.warning', 'hello 5424'])
  await logger(port, ['-d', '--rfc3164', '-t', 'oldapp', '-p', 'mail.err', 'hello 3164'])
  const docs = await stored(collector, db, 2)
  assert.equal(docs.length, 2)
  const [old, modern] = docs
  assert.deepEqual([modern.format, modern.facility, modern.severity, modern.app, modern.message], ['5424', 19, 4, 'myapp', 'hello 5424'])
  assert.deepEqual(modern.structuredData['foo@123'], { a: 'b' })
  assert.ok(modern.host, 'hostname present')
  assert.deepEqual([old.format, old.facility, old.severity, old.app, old.message], ['3164', 2, 3, 'oldapp', 'hello 3164'])
  const counters = await db.collection('counters').find().toArray()
  const total = counters.reduce((sum, c) => sum + c.daily, 0)
  assert.equal(total, 2)
  assert.ok(counters.some((c) => c._id.endsWith(`syslog.${modern.host}.warning`)))
  const minuteSum = counters.flatMap((c) => Object.values(c.minute).flatMap((h) => Object.values(h))).reduce((a, b) => a + b, 0)
  assert.equal(minuteSum, 2, 'each message in exactly one minute bucket')
})

test('logger over TCP: octet-counted and newline framing auto-detected per message', async (t) => {
  const { collector, db, port } = await startCollector(t, ['--protocol', 'tcp_server'])
  await logger(port, ['-T', '--octet-count', '--rfc5424', '-t', 'counted', 'first message'])
  await logger(port, ['-T', '--rfc5424', '-t', 'newline', 'second message'])
  await logger(port, ['-T', '--octet-count', '--rfc3164', '-t', 'counted3164', 'third message'])
  const docs = await stored(collector, db, 3)
  assert.deepEqual(docs.map((d) => [d.app, d.message]), [['counted', 'first message'], ['newline', 'second message'], ['counted3164', 'third message']])
  assert.equal(collector.summary().dropped.total, 0)
})

test('unparseable lines are stored raw and counted, not dropped', async (t) => {
  const { collector, db, port } = await startCollector(t, ['-i', '1'])
  const dgram = require('node:dgram')
  const socket = dgram.createSocket('udp4')
  for (const line of ['no priority here', '<999>bad pri', generateSyslog({ message: 'fine' })]) socket.send(line, port, '127.0.0.1')
  await waitFor(() => collector.summary().processed === 3)
  const [worker] = (await collector.stats()).workers
  assert.deepEqual(worker.custom.malformed, { 'no-pri': 1, 'bad-pri': 1 })
  socket.close()
  const docs = await stored(collector, db, 3)
  assert.equal(docs.length, 3)
  assert.deepEqual(docs.filter((d) => d.format === 'raw').map((d) => d.message).sort(), ['<999>bad pri', 'no priority here'])
})

// A device without a clock dates its lines 1970, a broken one 9999: counted
// in those days, its counts were deleted at the next retention pass while
// its messages stayed (1970), or never expired (9999).
test('counters count a line at its arrival, not at the time its sender wrote; the message keeps that time', async (t) => {
  const { collector, db, port } = await startCollector(t, ['-i', '1'])
  const dgram = require('node:dgram')
  const socket = dgram.createSocket('udp4')
  const before = new Date()
  for (const stamp of ['1970-01-01T00:00:00Z', '9999-12-31T23:59:00Z']) socket.send(`<13>1 ${stamp} clockless app - - - x`, port, '127.0.0.1')
  await waitFor(() => collector.summary().processed === 2)
  socket.close()
  const docs = await stored(collector, db, 2)
  assert.deepEqual(docs.map((d) => d.timestamp.getUTCFullYear()).sort(), [1970, 9999])
  const today = (d) => d.toISOString().slice(0, 10).replace(/-/g, '')
  const counters = await db.collection('counters').find({ daily: { $gt: 0 } }).toArray() // not a preallocated next day
  assert.deepEqual(counters.map((c) => [c.metric, c.daily]), [['syslog.clockless.notice', 2]])
  assert.ok([today(before), today(new Date())].includes(counters[0].day), `counted on the day it arrived, not ${counters[0].day}`)
})

test('parser: RFC 5424 edge cases, RFC 3164 variants, never throws', () => {
  const sd = parseSyslog('<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Appl\\"ication" eventID="1011"][x@1 y="\\]\\\\"] \uFEFFAn application event')
  assert.deepEqual([sd.facility, sd.severity, sd.host, sd.app, sd.procid, sd.msgid], [20, 5, 'mymachine.example.com', 'evntslog', null, 'ID47'])
  assert.deepEqual(sd.structuredData, { 'exampleSDID@32473': { iut: '3', eventSource: 'Appl"ication', eventID: '1011' }, 'x@1': { y: ']\\' } })
  assert.equal(sd.message, 'An application event')
  assert.equal(sd.timestamp.toISOString(), '2003-10-11T22:14:15.003Z')
  const nilAll = parseSyslog('<14>1 - - - - - -')
  assert.deepEqual([nilAll.format, nilAll.timestamp, nilAll.host, nilAll.structuredData, nilAll.message], ['5424', null, null, null, ''])
  const bsd = parseSyslog('<34>Oct 11 22:14:15 mymachine su: \'su root\' failed', { defaultYear: 2025 })
  assert.deepEqual([bsd.format, bsd.host, bsd.app, bsd.message], ['3164', 'mymachine', 'su', "'su root' failed"])
  assert.equal(bsd.timestamp.getFullYear(), 2025)
  const december = parseSyslog('<34>Dec 31 23:59:59 h app: x', { receivedAt: new Date(2026, 0, 1, 0, 0, 5) })
  assert.equal(december.timestamp.getFullYear(), 2025, 'a December line read in January is last year')
  const iso = parseSyslog('<13>2026-01-02T03:04:05Z host app[9]: iso variant\n')
  assert.deepEqual([iso.host, iso.app, iso.procid, iso.message], ['host', 'app', '9', 'iso variant'])
  assert.equal(parseSyslog('<13>1 2026-13-45T99:00:00Z h a - - - x').error, 'bad-timestamp')
  assert.equal(parseSyslog('<13>1 - h a - - [broken x').error, 'bad-structured-data')
  assert.equal(parseSyslog(Buffer.from([0x3c, 0x31, 0x33, 0x3e, 0xff, 0xfe, 0x41])).format, '3164')
  for (let i = 0; i < 2000; i++) {
    const bytes = Buffer.from(Array.from({ length: (i % 60) + 1 }, (_, j) => (i * 31 + j * 17) % 256))
    assert.doesNotThrow(() => parseSyslog(Buffer.concat([Buffer.from('<13>1 '), bytes])))
  }
})

test('generator round-trips through the parser', () => {
  const date = new Date(Date.UTC(2026, 4, 6, 7, 8, 9, 123))
  const sd = { 'a@1': { k: 'v"]\\' } }
  const m = parseSyslog(generateSyslog({ host: 'h', app: 'x', procid: '42', msgid: 'M1', severity: 'crit', facility: 'local7', message: 'msg', structuredData: sd, date }))
  assert.deepEqual([m.host, m.app, m.procid, m.msgid, m.severityName, m.facilityName, m.message], ['h', 'x', '42', 'M1', 'crit', 'local7', 'msg'])
  assert.deepEqual(m.structuredData, sd)
  assert.equal(m.timestamp.getTime(), date.getTime())
})

test('deviations: read and counted by default, stored raw with their name under --strict; bytes that are not UTF-8 are stored as sent', async (t) => {
  const dgram = require('node:dgram')
  const noHost = '<13>Dec 27 07:16:40 su[987]: F'
  const notUtf8 = Buffer.concat([Buffer.from('<13>1 2026-11-23T10:00:00.123456Z h app - - - '), Buffer.from([0xef, 0xbb, 0xbf, 0x61, 0xff, 0x62])])
  for (const [flags, expectRaw] of [[[], false], [['--strict'], true]]) {
    const { collector, db, port } = await startCollector(t, ['-i', '1', ...flags])
    const socket = dgram.createSocket('udp4')
    for (const line of [noHost, notUtf8]) await new Promise((resolve) => socket.send(line, port, '127.0.0.1', resolve))
    socket.close()
    await waitFor(() => collector.summary().processed === 2)
    const stats = await collector.stats()
    const [worker] = stats.workers
    if (expectRaw) {
      assert.deepEqual(worker.custom.malformed, { 'no-hostname': 1 })
      assert.deepEqual(worker.custom.deviations, {})
    } else {
      assert.deepEqual(worker.custom.malformed, {})
      assert.deepEqual(worker.custom.deviations, { 'no-hostname': 1 })
    }
    const docs = await stored(collector, db, 2)
    const su = docs.find((d) => d.message === noHost || d.app === 'su')
    assert.equal(su.format, expectRaw ? 'raw' : '3164', JSON.stringify(su))
    if (!expectRaw) assert.deepEqual(su.deviations, ['no-hostname'])
    const bad = docs.find((d) => d.app === 'app')
    assert.equal(bad.invalidUtf8, true)
    assert.deepEqual(worker.custom.encoding, { notUtf8: 1 }, 'text not UTF-8 is tallied')
    // collector status prints the tallies (QA: in --json only, so an operator saw nothing of lines stored raw).
    const { render } = require('../../app/commands/status')
    const { buildSnapshot, computeRates } = require('../../app/stats-file')
    const text = render(buildSnapshot({ name: 'syslog', collector: 'syslog', pid: process.pid, interval: 1000 }, stats, computeRates(stats)))
    assert.match(text, new RegExp(`^tallied: ${expectRaw ? 'malformed no-hostname 1; encoding notUtf8 1' : 'deviations no-hostname 1; encoding notUtf8 1'}$`, 'm'))
    assert.deepEqual(Buffer.from(bad.messageRaw.buffer), Buffer.from([0x61, 0xff, 0x62]), 'the bytes after the BOM, as sent')
    assert.equal(bad.timestampText, '2026-11-23T10:00:00.123456Z')
  }
})

test('per-host counters are capped: past --max-new-hosts-per-minute new host names a line is stored as always and counted under syslog.(other hosts); known hosts keep their own', async (t) => {
  const { collector, db, port } = await startCollector(t, ['-i', '1', '--max-new-hosts-per-minute', '3'])
  const dgram = require('node:dgram')
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  // The cap is per clock minute: not across a minute's turn.
  while (Date.now() % 60000 > 55000) await new Promise((resolve) => setTimeout(resolve, 500))
  const hosts = ['h0', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'h7', 'h8', 'h9', 'h0', 'h2']
  for (const [i, host] of hosts.entries()) {
    await new Promise((resolve) => socket.send(generateSyslog({ host, severity: 'err', message: `m${i}` }), port, '127.0.0.1', resolve))
    // In order: which hosts are the first three is what is asserted.
    await waitFor(() => collector.summary().processed === i + 1)
  }
  const [worker] = (await collector.stats()).workers
  assert.deepEqual([worker.custom.sinks.counters.newKeys, worker.custom.sinks.counters.overflowed], [3, 7])
  const docs = await stored(collector, db, hosts.length)
  assert.equal(docs.length, hosts.length, 'every line stored, whatever its host')
  // Counted ones only: a write may preallocate a metric's next day, zeroed
  // (preallocateRate, 1 in 1,000 by default), which a CI run met.
  const counters = await db.collection('counters').find({ daily: { $gt: 0 } }).sort({ metric: 1 }).toArray()
  assert.deepEqual(counters.map((c) => [c.metric, c.daily]),
    [['syslog.(other hosts)', 7], ['syslog.h0.err', 2], ['syslog.h1.err', 1], ['syslog.h2.err', 2]])
})

test('its settings reach its sinks: --collection and countersCollection name them, maxBatch messages are written without waiting for the flush interval', async (t) => {
  const dgram = require('node:dgram')
  const { MongoClient } = require('mongodb')
  const { uri } = await getTestMongo()
  const database = uniqueDbName('syslog_settings')
  // An hour between flushes: only maxBatch has anything written while it runs.
  const config = new syslog.Config(['--port', '0', '-i', '1', '--database', database, '--flush-interval', '1h', '--collection', 'logs']).getConfig()
  const collector = new syslog.Collector({ ...config, workerOptions: { mongoUri: uri, countersCollection: 'tallies', maxBatch: 3 } })
  t.after(() => collector.stop())
  await collector.start()
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const logs = client.db(database).collection('logs')
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const send = (n, from) => Promise.all(Array.from({ length: n }, (_, i) => new Promise((resolve) =>
    socket.send(generateSyslog({ host: 'h1', severity: 'err', message: `m${from + i}` }), collector.address().port, '127.0.0.1', resolve))))
  // The start's own flush (connect, indexes) done, or messages arriving during it would wait for the next.
  await waitFor(async () => (await collector.stats()).workers[0].custom.flushes >= 1)
  await send(3, 0)
  await waitFor(async () => (await logs.countDocuments()) === 3)
  await send(3, 3)
  await waitFor(async () => (await logs.countDocuments()) === 6)
  const [worker] = (await collector.stats()).workers
  assert.equal(worker.custom.sinks.logs.stored, 6)
  assert.ok(worker.custom.sinks.tallies, 'the counters sink reports under its collection')
  await collector.stop()
  const counters = await client.db(database).collection('tallies').find().toArray()
  assert.deepEqual(counters.map((c) => [c.metric, c.daily]), [['syslog.h1.err', 6]])
  assert.equal(await client.db(database).collection('syslog').countDocuments(), 0)
  const indexes = (await logs.indexes()).map((index) => index.name).sort()
  assert.deepEqual(indexes, ['_id_', 'host_1_timestamp_1', 'receivedAt_1', 'severity_1_timestamp_1'])
})

test('--counters-interval: a counter document is one upsert however many flushes its messages span; written once input pauses; no message acknowledged before its count is stored', { timeout: 60000 }, async (t) => {
  const dgram = require('node:dgram')
  const { MongoClient } = require('mongodb')
  const { uri } = await getTestMongo()
  const database = uniqueDbName('syslog_coalesce')
  // Documents every 20 ms, counters only when the input pauses (or in an hour).
  const config = new syslog.Config(['--port', '0', '-i', '1', '--database', database, '--flush-interval', '20', '--counters-interval', '1h']).getConfig()
  const collector = new syslog.Collector({ ...config, workerOptions: { mongoUri: uri } })
  t.after(() => collector.stop())
  await collector.start()
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const counted = async () => (await client.db(database).collection('counters').find().toArray()).reduce((sum, c) => sum + c.daily, 0)
  await waitFor(async () => (await collector.stats()).workers[0].custom.flushes >= 1)
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const LINES = 300
  let sent = 0
  let checks = 0
  const started = Date.now()
  while (sent < LINES) {
    await new Promise((resolve) => socket.send(generateSyslog({ host: 'h1', severity: 'err', message: `m${sent}` }), collector.address().port, '127.0.0.1', resolve))
    sent++
    if (sent % 20 === 0) {
      // What the master counts processed was acknowledged: its count is in the database.
      const processed = collector.summary().processed
      const inDb = await counted()
      assert.ok(inDb >= processed, `${processed} processed while ${inDb} counted in the database`)
      checks++
    }
    await new Promise((resolve) => setTimeout(resolve, 3))
  }
  const sendingMs = Date.now() - started
  // The input paused: the counts are written at the next flush, not in an hour.
  await waitFor(() => collector.summary().processed === LINES, { what: 'every line acknowledged', timeout: 10000 })
  assert.equal(await counted(), LINES)
  const [worker] = (await collector.stats()).workers
  const docWrites = worker.custom.sinks.syslog.writes
  const counterWrites = worker.custom.sinks.counters.writes
  t.diagnostic(`${sendingMs} ms of input, ${checks} checks: ${docWrites} document inserts, ${counterWrites} counter upserts`)
  assert.equal(worker.custom.sinks.syslog.stored, LINES)
  assert.ok(docWrites >= 10, `the documents were written every flush (${docWrites} inserts)`)
  assert.ok(counterWrites * 2 <= docWrites, `${counterWrites} counter upserts for ${docWrites} document inserts: coalesced`)
})

test('a worker the master waits for writes what it holds back: with an hour between flushes and between counter writes, --max-in-flight 10 still moves every line', { timeout: 60000 }, async (t) => {
  const dgram = require('node:dgram')
  const { MongoClient } = require('mongodb')
  const { uri } = await getTestMongo()
  const database = uniqueDbName('syslog_waits')
  const config = new syslog.Config(['--port', '0', '-i', '1', '--database', database, '--flush-interval', '1h', '--counters-interval', '1h', '--max-in-flight', '10']).getConfig()
  const collector = new syslog.Collector({ ...config, workerOptions: { mongoUri: uri } })
  t.after(() => collector.stop())
  await collector.start()
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  await waitFor(async () => (await collector.stats()).workers[0].custom.flushes >= 1)
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const LINES = 100
  for (let i = 0; i < LINES; i++) {
    await new Promise((resolve) => socket.send(generateSyslog({ host: 'h1', severity: 'err', message: `m${i}` }), collector.address().port, '127.0.0.1', resolve))
    if (i % 10 === 9) await new Promise((resolve) => setTimeout(resolve, 5))
  }
  // Only the master's word that it waits makes anything be written before the hour.
  await waitFor(() => collector.summary().processed === LINES, { what: 'every line acknowledged', timeout: 20000 }).catch(async (err) => { t.diagnostic(JSON.stringify(collector.summary())); t.diagnostic(JSON.stringify((await collector.stats()).workers[0].custom)); throw err })
  const db = client.db(database)
  assert.equal(await db.collection('syslog').countDocuments(), LINES)
  assert.equal((await db.collection('counters').find().toArray()).reduce((sum, c) => sum + c.daily, 0), LINES)
  assert.equal(collector.summary().dropped.total, 0, JSON.stringify(collector.summary().dropped))
})

/**
 * `lines` syslog lines (host `hostOf(i)`) sent while a worker is SIGKILLed
 * every 500 ms, until each is processed or dropped: the collector's
 * stats then, after at least two kills.
 */
async function underWorkerKills (t, collector, port, lines, hostOf) {
  const dgram = require('node:dgram')
  const { killLoop } = require('../helpers/kill-loop')
  const { accountedFor } = require('../../lib/master/counters')
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const loop = killLoop(collector, 500)
  for (let i = 0; i < lines; i++) {
    await new Promise((resolve) => socket.send(generateSyslog({ host: hostOf(i), severity: 'err', message: `m${i}` }), port, '127.0.0.1', resolve))
    if (i % 10 === 9) await new Promise((resolve) => setTimeout(resolve, 5))
  }
  const killed = await loop.stop(2)
  const s = await waitFor(async () => {
    const stats = await collector.stats()
    return stats.inFlight === 0 && accountedFor(stats) ? stats : null
  }, { timeout: 60000, what: 'every line processed or dropped' })
  t.diagnostic(`${killed} workers killed, ${s.replayed || 0} replayed`)
  assert.ok(killed >= 2, `workers killed: ${killed}`)
  assert.equal(s.dropped.total, 0, JSON.stringify(s.dropped))
  assert.equal(s.processed, lines)
  return s
}

test('coalesced counters through worker kills: every line stored once and counted once, a worker dying with a second of increments unwritten', { timeout: 120000 }, async (t) => {
  const { collector, db, port } = await startCollector(t, ['--counters-interval', '1s', '--flush-interval', '50'])
  const hosts = ['h1', 'h2', 'h3', 'h4']
  const LINES = 3000
  await underWorkerKills(t, collector, port, LINES, (i) => hosts[i % hosts.length])
  const messages = await db.collection('syslog').find({}, { projection: { message: 1 } }).toArray()
  assert.equal(new Set(messages.map((m) => m.message)).size, LINES)
  assert.equal(messages.length, LINES, 'each line stored once')
  const counters = await db.collection('counters').find().toArray()
  for (const host of hosts) {
    assert.equal(counters.filter((c) => c.metric === `syslog.${host}.err`).reduce((sum, c) => sum + c.daily, 0), LINES / hosts.length, `${host}: each line counted once`)
  }
})

test('per-host counters capped, through worker kills: every line counted once, under its host or (other hosts), never both', { timeout: 120000 }, async (t) => {
  // A flood of 40 host names against a share of 3 a minute: most lines go to (other hosts).
  const { collector, db, port } = await startCollector(t, ['--counters-interval', '1s', '--flush-interval', '50', '--max-new-hosts-per-minute', '3'])
  const LINES = 3000
  await underWorkerKills(t, collector, port, LINES, (i) => `h${i % 40}`)
  const counters = await db.collection('counters').find().toArray()
  const other = counters.filter((c) => c.metric === 'syslog.(other hosts)').reduce((sum, c) => sum + c.daily, 0)
  const total = counters.reduce((sum, c) => sum + c.daily, 0)
  t.diagnostic(`${counters.length} counter documents, ${other} lines under (other hosts)`)
  assert.ok(other > 0, 'the cap was met')
  assert.equal(total, LINES, 'each line counted once')
})

test('a frame whose document would pass 16 MiB is refused by name (documentTooLarge), not held and written again for ever; the next line is stored', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startCollector(t, ['--protocol', 'tcp_server', '--max-frame-bytes', String(20 * 1024 * 1024)])
  const net = require('node:net')
  const socket = net.connect(port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  const frame = (text) => { const body = Buffer.from(text); return Buffer.concat([Buffer.from(`${body.length} `), body]) }
  socket.write(frame(`<14>1 2026-11-29T10:00:00Z host big - - - ${'x'.repeat(17 * 1000 * 1000)}`))
  socket.end(frame('<14>1 2026-11-29T10:00:01Z host small - - - after the big one'))
  await waitFor(() => collector.summary().received === 2, { timeout: 30000 })
  await waitFor(() => collector.summary().inFlight === 0, { what: 'nothing held', timeout: 30000 })
  const summary = collector.summary()
  assert.equal(summary.dropped.documentTooLarge, 1)
  assert.equal(summary.processed, 1)
  const stats = await collector.stats()
  assert.equal(stats.workers.reduce((n, w) => n + ((w.custom && w.custom.dbErrors) || 0), 0), 0, 'no write was tried and failed')
  const docs = await db.collection('syslog').find({}, { projection: { app: 1 } }).toArray()
  assert.deepEqual(docs.map((d) => d.app), ['small'])
  const counted = await db.collection('counters').find().toArray()
  assert.equal(counted.reduce((sum, c) => sum + c.daily, 0), 1, 'the refused line is not counted either')
})
