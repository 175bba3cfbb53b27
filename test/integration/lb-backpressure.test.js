'use strict'
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { startLb, settled, tcpClient, write, waitFor, lines } = require('../helpers/lb')

// UDP past maxInFlight (queueFull drops, exact accounting) is tested on
// both receive paths in udp-receiver.test.js.

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
