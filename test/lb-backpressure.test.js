'use strict'
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { startLb, settled, udpSocket, sendDatagram, tcpClient, write, waitFor, lines } = require('./helpers/lb')

test('udp: past maxInFlight the excess is dropped as queueFull, with exact accounting', async (t) => {
  const lb = await startLb(t, { instances: 2, maxInFlight: 5, workerOptions: { delayMs: 10 } })
  const socket = await udpSocket(t)
  const total = 200
  for (const data of lines(total)) await sendDatagram(socket, lb.address().port, data)
  await waitFor(() => lb.summary().received === total, { what: 'the burst to be received' })
  const s = await settled(lb)
  assert.ok(s.dropped.queueFull > 0, 'some datagrams found every worker saturated')
  assert.ok(s.processed >= 10, 'each worker took at least maxInFlight')
  assert.equal(s.processed + s.dropped.queueFull, total)
  assert.equal(s.dropped.total, s.dropped.queueFull)
  const { workers } = await lb.stats()
  assert.equal(workers.reduce((n, w) => n + w.custom.seen, 0), s.processed)
  await lb.stop()
  const end = lb.summary()
  assert.equal(end.received, end.processed + end.failed + end.dropped.total)
})

test('tcp: a burst past maxInFlight pauses the sockets instead of dropping; order kept per connection', async (t) => {
  const lb = await startLb(t, {
    protocol: 'tcp_server',
    instances: 2,
    distribution: 'hash',
    maxInFlight: 4,
    batchSize: 2,
    workerOptions: { delayMs: 1, record: true }
  })
  const perConnection = 250
  const clients = []
  for (let c = 0; c < 3; c++) clients.push(await tcpClient(t, lb.address().port))
  await Promise.all(clients.map((socket) => write(socket, lines(perConnection).map((l) => `${l}\n`).join(''))))
  const total = clients.length * perConnection
  await waitFor(() => lb.summary().processed >= total, { timeout: 20000, what: `${total} frames processed` })
  const s = await settled(lb)
  assert.equal(s.received, total)
  assert.equal(s.processed, total)
  assert.equal(s.dropped.total, 0)
  // Each worker saw each connection's frames in the order they were sent.
  const { workers } = await lb.stats()
  const seen = new Map()
  for (const w of workers) {
    const last = new Map()
    for (const entry of w.custom.texts) {
      const [port, text] = entry.split('|')
      const n = Number(text.slice(1))
      assert.ok(!(last.get(port) >= n), `connection ${port}: m${n} after m${last.get(port)} on slot ${w.slot}`)
      last.set(port, n)
      seen.set(port, (seen.get(port) || 0) + 1)
    }
  }
  assert.deepEqual([...seen.values()], clients.map(() => perConnection))
})

test('tcp: stop() while sockets are paused still delivers the frames already read', async (t) => {
  const lb = await startLb(t, { protocol: 'tcp_server', instances: 1, maxInFlight: 2, batchSize: 1, workerOptions: { delayMs: 5 } })
  const socket = await tcpClient(t, lb.address().port)
  await write(socket, lines(100).map((l) => `${l}\n`).join(''))
  await waitFor(() => lb.summary().received >= 2, { what: 'the first frames' })
  await lb.stop()
  const s = lb.summary()
  assert.ok(s.received > 0)
  assert.equal(s.dropped.total, 0, `dropped ${JSON.stringify(s.dropped)}`)
  assert.equal(s.processed, s.received)
})
