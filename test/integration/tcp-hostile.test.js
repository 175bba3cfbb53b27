'use strict'

// tcp_server against peers that misbehave: a reset before the connection is
// accepted, a reset in the middle of a frame, many connections from one
// address, connections that never send. The master survives, counts each
// case, and keeps serving legitimate senders.

const test = require('node:test')
const assert = require('node:assert/strict')
const net = require('node:net')
const { once } = require('node:events')
const { startLb, settled, tcpClient, write, waitFor, sleep, HOST } = require('../helpers/lb')

// Blocks this process's event loop (the in-process master's) for `ms`.
function blockEventLoop (ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

function tcpLb (t, options = {}) {
  return startLb(t, { protocol: 'tcp_server', instances: 1, ...options })
}

test('a client that sends a frame and resets before the master accepts it: the master survives and keeps serving', async (t) => {
  const lb = await tcpLb(t)
  const { port } = lb.address()
  const resets = []
  for (let i = 0; i < 5; i++) {
    const socket = net.connect({ host: HOST, port })
    socket.on('error', () => {})
    resets.push(once(socket, 'connect').then(() => { socket.write(`lost ${i}\n`); return sleep(20) }).then(() => socket.resetAndDestroy()))
  }
  // The handshake completes in the kernel; the master accepts only after the block.
  const blocking = sleep(0).then(() => blockEventLoop(400))
  await Promise.all([...resets, blocking])
  await sleep(200)
  const client = await tcpClient(t, port)
  const before = lb.summary().received
  await write(client, 'after 1\nafter 2\n')
  await waitFor(() => lb.summary().received >= before + 2, { what: 'the frames sent after the resets' })
  const s = await settled(lb, 'the frames sent after the resets')
  assert.equal(lb.summary().state, 'running')
  assert.ok(s.processed >= 2, `the later frames were processed (${s.processed})`)
  assert.equal(s.received, s.processed + s.failed + s.dropped.total)
})

test('a reset in the middle of a frame counts as partial, exactly once, like a FIN', async (t) => {
  const lb = await tcpLb(t, { framing: 'octet-counting' })
  const client = await tcpClient(t, lb.address().port)
  client.on('error', () => {})
  await write(client, '5 whole20 only part')
  await waitFor(() => lb.summary().received === 1, { what: 'the whole frame' })
  await sleep(100)
  client.resetAndDestroy()
  await waitFor(() => lb.summary().dropped.partial === 1, { what: 'the cut frame counted as partial' })
  await sleep(200)
  const s = lb.summary()
  assert.equal(s.dropped.partial, 1)
  assert.equal(s.received, 2)
})

test('connections beyond maxConnectionsPerSource from one address are refused and counted; another address still gets through', async (t) => {
  const lb = await tcpLb(t, { maxConnectionsPerSource: 3 })
  const { port } = lb.address()
  const held = []
  for (let i = 0; i < 3; i++) held.push(await tcpClient(t, port))
  await waitFor(() => lb.summary().events.connections === 3, { what: 'three connections' })
  const extra = net.connect({ host: HOST, port })
  const refused = new Promise((resolve) => extra.once('error', (err) => resolve(err.code)))
  assert.equal(await refused, 'ECONNRESET', 'the refused sender sees a reset')
  assert.equal(lb.summary().events.connectionsRejected, 1, JSON.stringify(lb.summary().events))
  assert.deepEqual(lb.summary().eventReasons.connectionsRejected, { perSourceLimit: 1 })
  const other = net.connect({ host: HOST, port, localAddress: '127.0.0.2' })
  t.after(() => other.destroy())
  await once(other, 'connect')
  await write(other, 'from another address\n')
  await waitFor(() => lb.summary().processed === 1, { what: 'the other address\'s frame' })
  await write(held[0], 'held ones still work\n')
  await waitFor(() => lb.summary().processed === 2, { what: 'a held connection\'s frame' })
})

test('idle connections are closed after idleTimeout and counted', async (t) => {
  const lb = await tcpLb(t, { idleTimeout: 200 })
  const idle = await tcpClient(t, lb.address().port)
  await once(idle, 'close')
  assert.equal(lb.summary().events.idleTimeouts, 1)
})

// An idle connection was only half-closed (a FIN): a peer ignoring it kept
// its slot, and what it sent after was still received.
test('an idle connection is closed whole, its slot freed, even when its peer ignores the FIN', async (t) => {
  const lb = await tcpLb(t, { idleTimeout: 200, maxConnectionsPerSource: 2, reclaimIdleAfter: 0 })
  const { port } = lb.address()
  const stubborn = []
  for (let i = 0; i < 2; i++) {
    const socket = net.connect({ host: HOST, port, allowHalfOpen: true })
    socket.on('error', () => {})
    t.after(() => socket.destroy())
    await once(socket, 'connect')
    stubborn.push(socket)
  }
  await waitFor(() => lb.summary().events.idleTimeouts === 2, { what: 'both idle' })
  stubborn[0].write('sent after the idle timeout\n')
  const third = await tcpClient(t, port)
  await write(third, 'a new connection gets a slot\n')
  await waitFor(() => lb.summary().received === 1, { what: 'the new connection\'s frame' })
  await sleep(200)
  assert.equal(lb.summary().received, 1, 'nothing from the closed connection')
  assert.equal(lb.summary().events.connectionsRejected || 0, 0)
})

test('the defaults bound what idle connections can hold: a per-source limit and a non-zero idle timeout', async (t) => {
  const lb = await tcpLb(t)
  assert.equal(lb.options.maxConnectionsPerSource, 32)
  assert.ok(lb.options.idleTimeout > 0)
})
