'use strict'

// The syslog collector against a database that is not there at start, and
// one that freezes mid-run: the listener is up regardless, messages are
// held unacknowledged (not counted processed) and stored once the server
// answers, and what the operator sees says why.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const { MongoClient } = require('mongodb')
const syslog = require('../../collectors/syslog')
const { tempBufferDir } = require('../helpers/buffer-dir')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { createTcpProxy } = require('../helpers/tcp-proxy')
const { waitFor } = require('../helpers/streams')
const { freePort } = require('../helpers/ports')
const { render: renderStatus } = require('../../app/commands/status')

function captureLogger () {
  const records = []
  const logger = { child: () => logger }
  for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal']) {
    logger[level] = (fields, msg) => records.push({ level, fields: typeof fields === 'object' ? fields : {}, msg: typeof fields === 'string' ? fields : msg })
  }
  return { logger, records }
}

async function startSyslog (t, uri, logger) {
  const database = uniqueDbName('dbfault')
  const config = new syslog.Config(['--port', '0', '-i', '1', '--database', database, '--flush-interval', '50ms', '--buffer-dir', tempBufferDir(t)]).getConfig()
  const collector = new syslog.Collector({ ...config, logger, workerOptions: { mongoUri: uri, serverSelectionTimeoutMS: 1000 } })
  t.after(() => collector.stop())
  await collector.start()
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const send = (lines) => Promise.all(lines.map((line) => new Promise((resolve, reject) => {
    socket.send(line, collector.address().port, '127.0.0.1', (err) => err ? reject(err) : resolve())
  })))
  return { collector, database, send }
}

const lines = (n, tag) => Array.from({ length: n }, (_, i) => `<14>1 2026-11-23T10:00:00Z h app - - - ${tag} ${i}`)

// The test server, and a proxy in front of it (closed after the test).
async function proxiedTestMongo (t) {
  const { uri } = await getTestMongo()
  const target = new URL(uri.replace('mongodb://', 'http://'))
  const proxy = await createTcpProxy({ targetHost: target.hostname, targetPort: Number(target.port) })
  t.after(() => proxy.close())
  return { uri, proxy }
}

// Every one of `n` messages processed, then, the collector stopped, stored, nothing dropped.
async function storedAll (collector, uri, database, n, timeout) {
  await waitFor(() => collector.summary().processed === n, { timeout })
  await collector.stop()
  assert.equal((await storedMessages(uri, database)).length, n)
  assert.equal(collector.summary().dropped.total, 0)
}

async function storedMessages (uri, database) {
  const client = await new MongoClient(uri).connect()
  try {
    return await client.db(database).collection('syslog').find().toArray()
  } finally {
    await client.close()
  }
}

test('a database that is down at start: the collector listens at once, holds what arrives unacknowledged, logs the real cause, and stores it all when the server comes', { timeout: 60000 }, async (t) => {
  const { uri } = await getTestMongo()
  const target = new URL(uri.replace('mongodb://', 'http://'))
  const port = await freePort()
  const { logger, records } = captureLogger()
  const { collector, database, send } = await startSyslog(t, `mongodb://127.0.0.1:${port}/`, logger)
  await send(lines(20, 'early'))
  await waitFor(() => collector.summary().received === 20)
  const [worker] = (await collector.stats()).workers
  await waitFor(async () => { const [w] = (await collector.stats()).workers; return w.custom && w.custom.dbDown })
  assert.equal(collector.summary().processed, 0, 'nothing is processed before it is stored')
  assert.equal(collector.summary().inFlight, 20, 'the master holds every message')
  assert.ok(worker.pid > 0)
  await waitFor(() => records.some((r) => /database unreachable \(.*ECONNREFUSED/.test(r.msg)), { timeout: 20000 })
  assert.ok(!records.some((r) => /buffering timed out/.test(r.msg)), 'the real cause, not mongoose buffering')
  const proxy = await createTcpProxy({ targetHost: target.hostname, targetPort: Number(target.port), port })
  t.after(() => proxy.close())
  await waitFor(() => collector.summary().processed === 20, { timeout: 30000 })
  await collector.stop()
  const docs = await storedMessages(uri, database)
  assert.equal(docs.length, 20)
  assert.equal(collector.summary().dropped.total, 0)
})

test('a frozen database (SIGSTOP) shows in stats: oldestUnackedMs grows, the worker reports a stalled write, and the master warns; after SIGCONT everything is stored', { timeout: 60000 }, async (t) => {
  const { uri, server } = await getTestMongo()
  if (!server) return t.skip('MONGODB_URI given: the test cannot pause a server it did not start')
  const { logger, records } = captureLogger()
  const { collector, database, send } = await startSyslog(t, uri, logger)
  await send(lines(5, 'before'))
  await waitFor(() => collector.summary().processed === 5)
  server.pause()
  t.after(() => server.resume())
  await send(lines(30, 'frozen'))
  const seen = await waitFor(async () => {
    const s = await collector.stats()
    const w = s.workers[0]
    return s.oldestUnackedMs > 1000 && w.custom && w.custom.dbStalled && { s, w }
  }, { timeout: 20000 })
  assert.equal(seen.s.processed, 5, 'messages the frozen server has not stored are not processed')
  assert.ok(seen.w.custom.writeInProgressMs > 1000)
  // collector status shows it, not only --json: it reads as merely slow in the logs until a timeout.
  const text = renderStatus({ name: 'frozen', pid: process.pid, alive: true, age: 0, interval: 1000, collector: 'syslog', time: '', stats: seen.s, rates: { received: 0, processed: 0, failed: 0, dropped: 0, workers: [] } })
  assert.match(text, /DATABASE\n.* stalled \d+s$/m, text)
  await waitFor(() => records.some((r) => r.level === 'warn' && /have not acknowledged messages/.test(r.msg)), { timeout: 15000 })
  server.resume()
  await waitFor(() => collector.summary().processed === 35, { timeout: 30000 })
  await collector.stop()
  const docs = await storedMessages(uri, database)
  assert.equal(docs.length, 35)
})

// An idle worker said `ok` while its database was gone: it learned of it
// only at its next write. The driver's heartbeat says so within ~10 s.
test('a database gone while nothing arrives: status says down within the driver\'s heartbeat, and ok again once it is back', { timeout: 90000 }, async (t) => {
  const { proxy } = await proxiedTestMongo(t)
  const { collector, send } = await startSyslog(t, `${proxy.uri}/`, captureLogger().logger)
  await send(lines(3, 'idle'))
  await waitFor(() => collector.summary().processed === 3)
  const worker = async () => (await collector.stats()).workers[0].custom
  assert.equal((await worker()).dbDown, false)
  proxy.cut({ mode: 'reset' })
  const down = await waitFor(async () => { const w = await worker(); return w.dbDown && w }, { timeout: 30000 })
  assert.match(down.dbError, /^the driver has had no server to write to for \d+ s \(its heartbeat\)$/)
  const s = await collector.stats()
  const text = renderStatus({ name: 'idle', pid: process.pid, alive: true, age: 0, interval: 1000, collector: 'syslog', time: '', stats: s, rates: { received: 0, processed: 0, failed: 0, dropped: 0, workers: [] } })
  assert.match(text, /DATABASE\n.*down/m, text)
  proxy.restore()
  await waitFor(async () => (await worker()).dbDown === false, { timeout: 30000 })
})

// A port of the URI taken by another program: the driver says only
// timeouts, a stalled write or an older cause. Said as what it is.
const notMongo = (port) => new RegExp(`127\\.0\\.0\\.1:${port} accepts connections but does not answer as MongoDB`)
// Silence is said as such: a stalled MongoDB (SIGSTOPped, overloaded) reads so too, not only another program.
const silent = (port) => new RegExp(`127\\.0\\.0\\.1:${port} accepts connections but answers nothing within \\d+ ms \\(a MongoDB stalled or overloaded, or another program that says nothing\\)`)
const statusText = (s) => renderStatus({ name: 'taken', pid: process.pid, alive: true, age: 0, interval: 1000, collector: 'syslog', time: '', stats: s, rates: { received: 0, processed: 0, failed: 0, dropped: 0, workers: [] } })

test('the URI\'s port answering garbage at start: one line at start and in the worker\'s log and dbError (status shows it); stored once the real server is there', { timeout: 90000 }, async (t) => {
  const { uri, proxy } = await proxiedTestMongo(t)
  proxy.cut({ mode: 'http' })
  const port = proxy.address().port
  const { logger, records } = captureLogger()
  const { collector, database, send } = await startSyslog(t, `${proxy.uri}/`, logger)
  await waitFor(() => records.some((r) => r.level === 'warn' && notMongo(port).test(r.msg) && /nothing is stored until MongoDB answers there/.test(r.msg)), { timeout: 10000 })
  await send(lines(20, 'garbage'))
  await waitFor(() => records.some((r) => r.level === 'warn' && /^database unreachable: /.test(r.msg) && notMongo(port).test(r.msg)), { timeout: 20000 })
  const s = await waitFor(async () => { const s = await collector.stats(); return notMongo(port).test(s.workers[0].custom.dbError || '') && s }, { timeout: 20000 })
  assert.equal(s.workers[0].custom.dbDown, true)
  assert.match(statusText(s), new RegExp(`^database \\(slot 0\\): ${notMongo(port).source}`, 'm'))
  assert.equal(collector.summary().processed, 0)
  proxy.restore()
  await storedAll(collector, uri, database, 20, 30000)
})

test('the URI\'s port taken mid-run by a server that stays silent, then by one answering garbage: the worker says so (not just a stalled write) in its log and dbError; stored once the real server is back', { timeout: 120000 }, async (t) => {
  const { uri, proxy } = await proxiedTestMongo(t)
  const port = proxy.address().port
  const { logger, records } = captureLogger()
  const { collector, database, send } = await startSyslog(t, `${proxy.uri}/`, logger)
  await send(lines(5, 'before'))
  await waitFor(() => collector.summary().processed === 5)
  proxy.cut({ mode: 'hold' })
  await send(lines(10, 'silent'))
  const saidSilent = () => records.filter((r) => r.level === 'warn' && silent(port).test(r.msg)).length
  await waitFor(() => saidSilent() > 0, { timeout: 30000 })
  const s = await waitFor(async () => { const s = await collector.stats(); return s.workers[0].custom.dbDown && silent(port).test(s.workers[0].custom.dbError || '') && s }, { timeout: 20000 })
  const said = () => records.filter((r) => r.level === 'warn' && notMongo(port).test(r.msg)).length
  assert.match(statusText(s), /DATABASE\n.* down$/m)
  const before = said()
  proxy.cut({ mode: 'http' })
  await waitFor(() => said() > before, { timeout: 30000 })
  assert.ok(!records.slice(-3).some((r) => /ECONNREFUSED/.test(r.msg)), 'no stale cause while the port answers')
  proxy.restore()
  await storedAll(collector, uri, database, 15, 60000)
})

test('the not-MongoDB probe: the real server, a reset or a closed port are not "another program"; garbage is, silence is said as silence (a stalled server too)', { timeout: 30000 }, async (t) => {
  const { findNotMongo } = require('../../lib/mongo/not-mongo')
  const { uri, proxy } = await proxiedTestMongo(t)
  const port = proxy.address().port
  assert.equal(await findNotMongo(uri), null)
  assert.equal(await findNotMongo(`${proxy.uri}/db?retryWrites=true`), null, 'through the proxy')
  proxy.cut({ mode: 'reset' })
  assert.equal(await findNotMongo(proxy.uri), null, 'a connection reset without a byte: a peer gone, not another program')
  proxy.cut({ mode: 'hold' })
  assert.match(await findNotMongo(proxy.uri, { timeoutMs: 300 }), silent(port))
  proxy.cut({ mode: 'http' })
  assert.match(await findNotMongo(`mongodb://127.0.0.1:1,${proxy.uri.slice('mongodb://'.length)}/db`), notMongo(port), 'the host that is not MongoDB, among several')
  assert.equal(await findNotMongo(`mongodb://127.0.0.1:${await freePort()}`), null, 'nothing listening')
})
