'use strict'
// The master's /metrics, /healthz and /readyz, scraped by a real Prometheus
// server (Debian's `prometheus`, scrape interval 1 s): what Prometheus
// stored equals what was sent, and readiness follows the worker slots.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const net = require('node:net')
const { startLb, settled, udpSocket, sendPaced, lines, HOST } = require('../helpers/lb')
const { waitFor } = require('../helpers/wait-for')
const { startPrometheus, PROMETHEUS_SKIP } = require('../helpers/prometheus')

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
