'use strict'
// The master's /metrics, /healthz and /readyz, scraped by a real Prometheus
// server (Debian's `prometheus`, scrape interval 1 s): what Prometheus
// stored equals what was sent, and readiness follows the worker slots.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const net = require('node:net')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { startLb, settled, udpSocket, sendPaced, lines, fixture, HOST } = require('../helpers/lb')
const { waitFor } = require('../helpers/wait-for')
const { startPrometheus, PROMETHEUS_SKIP } = require('../helpers/prometheus')
const { removeDir } = require('../helpers/temp-dir')

async function get (address, route) {
  const res = await fetch(`http://${address.address}:${address.port}${route}`)
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text() }
}

test('a real Prometheus scrapes /metrics: the counters it stored equal the messages sent, per worker too, with the Node process metrics', { skip: PROMETHEUS_SKIP, timeout: 120000 }, async (t) => {
  const lb = await startLb(t, { name: 'promtest', metricsPort: 0 })
  const address = lb.metricsAddress()
  assert.equal(lb.summary().metrics.port, address.port)
  const prometheus = await startPrometheus(t, `${address.address}:${address.port}`)
  await waitFor(() => prometheus.targetUp(), { what: 'the collector target to be up', timeout: 30000, interval: 250 })
  const sender = await udpSocket(t)
  await sendPaced(lb, sender, lines(700))
  const summary = await settled(lb)
  assert.equal(summary.processed, 700)
  const scraped = await waitFor(async () => {
    const [received] = await prometheus.query('collector_messages_received_total{collector="promtest"}')
    return received && received.value === 700 && received
  }, { what: 'Prometheus to store 700 received', timeout: 30000, interval: 250 })
  assert.equal(scraped.labels.job, 'collector')
  const [processed] = await prometheus.query('collector_messages_processed_total')
  assert.equal(processed.value, 700)
  const perSlot = await prometheus.query('collector_worker_messages_processed_total')
  assert.deepEqual(perSlot.map((s) => s.labels.slot).sort(), ['0', '1'])
  assert.equal(perSlot.reduce((n, s) => n + s.value, 0), 700)
  const [dropped] = await prometheus.query('sum(collector_messages_dropped_total)')
  assert.equal(dropped.value, 0)
  const [ready] = await prometheus.query('collector_ready')
  assert.equal(ready.value, 1)
  assert.ok((await prometheus.query('process_resident_memory_bytes{collector="promtest"}'))[0].value > 0, 'default process metrics')
  const text = await get(address, '/metrics')
  assert.match(text.type, /^text\/plain; version=0\.0\.4/)
  assert.match(text.body, /^collector_messages_dropped_total\{reason="kernel",collector="promtest"\} 0$/m)
  assert.match(text.body, /^collector_messages_dropped_total\{reason="bufferFull",collector="promtest"\} 0$/m)
  assert.equal(lb.summary().buffer, null)
  assert.doesNotMatch(text.body, /collector_buffer_|collector_messages_buffered|collector_oldest_buffered|collector_messages_replayed/, 'no buffer series while the buffer is off')
})

// The segment files of a buffer directory, read from the file system: the
// oracle for the bytes and segments the balancer reports.
function segmentFiles (dir) {
  return fs.readdirSync(dir).filter((name) => name.endsWith('.ccj')).sort().map((name) => fs.statSync(path.join(dir, name)).size)
}

test('with the disk buffer on, a real Prometheus stores what waits in it, its size against the bound, what a start replayed and skipped, and bufferFull drops; /readyz stays 200 while messages wait', { skip: PROMETHEUS_SKIP, timeout: 120000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collector-prom-buffer-'))
  t.after(() => removeDir(dir))
  const bufferDir = path.join(dir, 'buffer')
  // A worker that never acknowledges: 10 messages in flight, the rest wait in the buffer.
  const options = { name: 'prombuf', worker: fixture('buffering-worker.js'), workerOptions: { dir, hold: true }, instances: 1, maxInFlight: 10, batchSize: 5, buffer: true, bufferDir, bufferMaxBytes: 65536 }
  const first = await startLb(t, options)
  const sender = await udpSocket(t)
  await sendPaced(first, sender, lines(50))
  await waitFor(() => first.summary().buffered === 40, { what: '40 messages waiting in the buffer' })
  await first.stop()
  assert.equal(first.summary().buffer.kept, 50, 'a stop during the outage leaves every message in the buffer')
  // A torn record at the end of the first segment, as a crash mid-write leaves it.
  const [segment] = fs.readdirSync(bufferDir).filter((name) => name.endsWith('.ccj')).sort()
  const head = fs.readFileSync(path.join(bufferDir, segment))
  const torn = head.subarray(0, 12 + Math.floor(head.readUInt32BE(4) / 2))
  fs.appendFileSync(path.join(bufferDir, segment), torn)

  const lb = await startLb(t, { ...options, metricsPort: 0 })
  const address = lb.metricsAddress()
  const prometheus = await startPrometheus(t, `${address.address}:${address.port}`)
  await waitFor(() => prometheus.targetUp(), { what: 'the collector target to be up', timeout: 30000, interval: 250 })
  await sendPaced(lb, sender, lines(100).map((line) => line.padEnd(1000, '.')))
  // Every batch sent or waiting lies in the buffer: none is still being filled.
  const s = await waitFor(() => { const now = lb.summary(); return now.buffer.messages === now.inFlight + now.buffered && now }, { what: 'the last batch to be formed' })
  assert.ok(s.buffered > 0 && s.dropped.bufferFull > 0, 'the bound was reached: messages wait and new ones were dropped')
  const ready = await get(address, '/readyz')
  assert.equal(ready.status, 200, 'buffering is not a fault')
  assert.equal(JSON.parse(ready.body).ready, true)

  const value = async (expr) => { const [series] = await prometheus.query(expr); return series ? series.value : undefined }
  await waitFor(async () => await value('collector_messages_received_total') === 100 && await value('collector_messages_buffered') === s.buffered,
    { what: 'Prometheus to store the figures after the last message', timeout: 30000, interval: 250 })
  const files = segmentFiles(bufferDir)
  const expected = {
    collector_messages_received_total: 100,
    collector_messages_replayed_total: 50,
    collector_buffer_damaged_records_total: 1,
    collector_buffer_damaged_bytes_total: torn.length,
    collector_buffer_max_bytes: 65536,
    collector_buffer_bytes: files.reduce((sum, size) => sum + size, 0),
    collector_buffer_segments: files.length,
    collector_buffer_full: 1,
    collector_buffer_kept_messages_total: 0,
    collector_buffer_write_errors_total: 0,
    collector_messages_buffered: s.buffered,
    collector_messages_in_flight: s.inFlight,
    'collector_messages_dropped_total{reason="bufferFull"}': s.dropped.bufferFull
  }
  const stored = {}
  for (const expr of Object.keys(expected)) stored[expr] = await value(expr)
  assert.deepEqual(stored, expected)
  assert.deepEqual([s.replayed, s.buffer.damagedRecords, s.buffer.damagedBytes, s.buffer.bytes, s.buffer.segments, s.buffer.full],
    [50, 1, torn.length, expected.collector_buffer_bytes, files.length, true], 'summary() says what Prometheus stored')
  // The identity, from what Prometheus stored: every message received or replayed is somewhere.
  const dropped = await value('sum(collector_messages_dropped_total)')
  const processed = await value('collector_messages_processed_total')
  assert.equal(100 + 50, processed + dropped + s.inFlight + s.buffered)
  const oldest = await value('collector_oldest_buffered_seconds')
  assert.ok(oldest > 0 && oldest <= lb.summary().buffer.oldestMs / 1000, `oldest buffered age ${oldest} s`)
})

test('/healthz is 200 while the process runs; /readyz is 503 with a reason while a worker slot is down, 200 once it is back', { timeout: 60000 }, async (t) => {
  const lb = await startLb(t, { metricsPort: 0, respawnDelay: 1000 })
  const address = lb.metricsAddress()
  assert.deepEqual(await get(address, '/healthz'), { status: 200, type: 'application/json', body: '{"status":"ok"}\n' })
  const ok = await get(address, '/readyz')
  assert.equal(ok.status, 200)
  assert.deepEqual(JSON.parse(ok.body), { ready: true, state: 'running', listening: true, workers: { online: 2, expected: 2 } })
  const [victim] = (await lb.stats()).workers
  process.kill(victim.pid, 'SIGKILL')
  const down = await waitFor(async () => { const r = await get(address, '/readyz'); return r.status === 503 && r }, { what: '/readyz to say 503' })
  assert.deepEqual(JSON.parse(down.body), { ready: false, state: 'running', listening: true, workers: { online: 1, expected: 2 }, reason: '1 of 2 worker slots online' })
  assert.equal((await get(address, '/healthz')).status, 200)
  await waitFor(async () => (await get(address, '/readyz')).status === 200, { what: '/readyz to recover', timeout: 20000 })
  assert.equal((await get(address, '/nope')).status, 404)
  await lb.stop()
  await assert.rejects(fetch(`http://${address.address}:${address.port}/healthz`), 'the endpoints close with the collector')
})

test('a metrics port in use fails the start with ERR_LISTEN naming it', async (t) => {
  const blocker = net.createServer()
  await new Promise((resolve) => blocker.listen(0, HOST, resolve))
  t.after(() => blocker.close())
  const { port } = blocker.address()
  const { LoadBalancer } = require('../..')
  const { COUNTING } = require('../helpers/lb')
  const lb = new LoadBalancer({ worker: COUNTING, instances: 1, port: 0, metricsPort: port })
  t.after(() => lb.stop())
  await assert.rejects(lb.start(), (err) => err.code === 'ERR_LISTEN' && err.message === `cannot listen on ${HOST}:${port} (http): address already in use (EADDRINUSE)`)
  assert.equal(lb.summary().state, 'stopped')
})
