'use strict'
const { test } = require('node:test')
const assert = require('node:assert/strict')
const net = require('node:net')
const { once } = require('node:events')
const dgram = require('node:dgram')
const { LoadBalancer, ListenError } = require('../..')
const { COUNTING, HOST, startLb, settled, udpSocket, sendPaced, waitFor, lines, sleep } = require('../helpers/lb')

function newLb (t, options) {
  const lb = new LoadBalancer({ worker: COUNTING, instances: 1, host: HOST, retryDelay: 50, workerOptions: { record: true }, ...options })
  t.after(() => lb.stop())
  return lb
}

function collectListenerErrors (lb) {
  const errors = []
  lb.on('listenerError', (err, delay) => errors.push({ code: err.code, delay }))
  return errors
}

// Fails the test instead of hanging it when `promise` never settles.
function within (promise, ms, what) {
  let timer
  const timeout = new Promise((resolve, reject) => { timer = setTimeout(() => reject(new Error(`${what} did not settle in ${ms} ms`)), ms) })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

test('udp: a busy port at start fails start() at once with ERR_LISTEN naming the address, retry on or off; nothing left running', async (t) => {
  const occupier = await udpSocket(t)
  const port = occupier.address().port
  for (const retry of [true, false]) {
    const lb = newLb(t, { port, retry })
    const errors = collectListenerErrors(lb)
    await assert.rejects(within(lb.start(), 10000, 'start()'), (err) => {
      assert.ok(err instanceof ListenError)
      assert.equal(err.code, 'ERR_LISTEN')
      assert.equal(err.message, `cannot listen on ${HOST}:${port} (udp): address already in use (EADDRINUSE)`)
      assert.equal(err.cause.code, 'EADDRINUSE')
      return true
    })
    assert.deepEqual(errors, [], 'no retry of a first bind')
    assert.equal(lb.address(), null)
    assert.equal(lb.summary().state, 'stopped')
    assert.equal((await lb.stats()).workers.length, 0, 'the workers were stopped')
  }
})

// A running listener's socket breaks, and its port is taken before the
// reopen: the reopen is retried with backoff x1.5 until the port is free.
async function breakAndOccupy (t, lb) {
  const port = lb.address().port
  const errors = collectListenerErrors(lb)
  let occupier
  const taken = new Promise((resolve) => lb.once('listenerError', () => {
    occupier = dgram.createSocket('udp4')
    occupier.bind(port, HOST, resolve)
  }))
  t.after(() => { try { occupier.close() } catch {} })
  lb.listener.socket.emit('error', Object.assign(new Error('forced'), { code: 'EFORCED' }))
  await taken
  return { port, errors, free: () => new Promise((resolve) => occupier.close(resolve)) }
}

test('udp: a port taken while the listener reopens after an error is retried with backoff x1.5 until free, then traffic flows', async (t) => {
  const lb = newLb(t, {})
  await lb.start()
  const { port, errors, free } = await breakAndOccupy(t, lb)
  await waitFor(() => errors.length >= 3, { what: 'three listener errors' })
  const reopened = once(lb, 'listening')
  await free()
  await within(reopened, 5000, 'reopen')
  assert.deepEqual(errors.slice(0, 3), [
    { code: 'EFORCED', delay: 50 },
    { code: 'EADDRINUSE', delay: 75 },
    { code: 'EADDRINUSE', delay: 113 }
  ])
  assert.equal(lb.address().port, port)
  assert.equal(lb.summary().restarts.listener, errors.length)
  const sender = await udpSocket(t)
  await sendPaced(lb, sender, lines(20))
  const stats = await settled(lb)
  assert.equal(stats.processed, 20)
})

test('stop() while a reopen is still retrying a busy port ends it', async (t) => {
  const lb = newLb(t, { retryDelay: 200 })
  await lb.start()
  const { errors } = await breakAndOccupy(t, lb)
  await waitFor(() => errors.length >= 2, { what: 'a retried reopen' })
  await within(lb.stop(), 5000, 'stop()')
  assert.equal(lb.summary().state, 'stopped')
  assert.equal(lb.address(), null)
})

test('udp: a socket error on a running listener reopens it on the same port after the delay', async (t) => {
  const lb = await startLb(t, { instances: 1, retryDelay: 50 })
  const port = lb.address().port
  const errors = collectListenerErrors(lb)
  const sender = await udpSocket(t)
  await sendPaced(lb, sender, lines(10, 'before'))
  const reopened = once(lb, 'listening')
  const old = lb.listener
  lb.listener.socket.emit('error', Object.assign(new Error('forced'), { code: 'EFORCED' }))
  await within(reopened, 5000, 'reopen')
  assert.notEqual(lb.listener, old)
  assert.deepEqual(errors, [{ code: 'EFORCED', delay: 50 }])
  assert.equal(lb.address().port, port)
  assert.equal(lb.summary().restarts.listener, 1)
  await sendPaced(lb, sender, lines(10, 'after'))
  const stats = await settled(lb)
  assert.equal(stats.processed, 20)
})

// A line-protocol peer the balancer connects to; it sends `frames` to each connection.
async function startPeer (t, port = 0) {
  const sockets = new Set()
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
  })
  const peer = {
    server,
    sockets,
    send: (text) => { for (const s of sockets) s.write(text) },
    close: () => {
      for (const s of sockets) s.destroy()
      return new Promise((resolve) => server.close(resolve))
    }
  }
  t.after(() => server.listening && peer.close())
  server.listen(port, HOST)
  await once(server, 'listening')
  return peer
}

test('tcp_client: frames arrive; the peer goes away and comes back on its port, the balancer reconnects with backoff', async (t) => {
  let peer = await startPeer(t)
  const port = peer.server.address().port
  const lb = newLb(t, { protocol: 'tcp_client', port, framing: 'newline' })
  const errors = collectListenerErrors(lb)
  await lb.start()
  await waitFor(() => peer.sockets.size === 1, { what: 'the balancer to connect' })
  peer.send('one\ntwo\n')
  await waitFor(() => lb.summary().received === 2)

  await peer.close()
  await waitFor(() => errors.length >= 3, { what: 'three failed reconnects' })
  const reconnected = once(lb, 'listening')
  peer = await startPeer(t, port)
  await within(reconnected, 5000, 'reconnect')
  await waitFor(() => peer.sockets.size === 1, { what: 'the balancer to reconnect' })
  peer.send('three\nfour\n')
  await waitFor(() => lb.summary().received === 4)
  const stats = await settled(lb)
  assert.equal(stats.processed, 4)
  assert.deepEqual(errors.slice(0, 3).map((e) => e.delay), [50, 75, 113])
  assert.equal(errors[1].code, 'ECONNREFUSED')
  assert.equal(stats.restarts.listener, errors.length)
  const { workers } = await lb.stats()
  assert.deepEqual(workers[0].custom.texts.map((e) => e.split('|')[1]), ['one', 'two', 'three', 'four'])

  // Success reset the backoff: the next failure waits the initial delay again.
  const before = errors.length
  await peer.close()
  await waitFor(() => errors.length > before)
  assert.equal(errors[before].delay, 50)
  await sleep(0)
})

test('tcp_client: a frame its server had not finished when the collector stops is partial, not stored as if whole', async (t) => {
  const peer = await startPeer(t)
  const lb = newLb(t, { protocol: 'tcp_client', port: peer.server.address().port, framing: 'newline' })
  await lb.start()
  await waitFor(() => peer.sockets.size === 1, { what: 'the balancer to connect' })
  peer.send('whole\nhal')
  await waitFor(() => lb.summary().received === 1)
  await waitFor(async () => (await lb.stats()).inFlight === 0)
  await lb.stop()
  const s = lb.summary()
  assert.deepEqual([s.received, s.processed, s.dropped.partial], [2, 1, 1])
})

// Without keepalive a peer gone silently (no FIN, no reset) left the client connected to nothing.
test('tcp_client: its connection has TCP keepalive on, so that a peer gone without a word is found', async (t) => {
  const { execFileSync } = require('node:child_process')
  const peer = await startPeer(t)
  const port = peer.server.address().port
  const lb = newLb(t, { protocol: 'tcp_client', port, framing: 'newline' })
  await lb.start()
  await waitFor(() => peer.sockets.size === 1, { what: 'the balancer to connect' })
  const { address, port: local } = lb.address()
  const line = execFileSync('ss', ['-tnoH', 'state', 'established', `( sport = :${local} and dport = :${port} )`], { encoding: 'utf8' }).trim()
  assert.match(line, /timer:\(keepalive,/, `${address}:${local} → ${port}: ${line}`)
})

test('tcp_client stopped while it waits for its server: start() rejects saying so, with the last connect error as its cause', async (t) => {
  const peer = await startPeer(t)
  const port = peer.server.address().port
  await peer.close() // nothing listens there now
  const lb = newLb(t, { protocol: 'tcp_client', port, framing: 'newline' })
  const errors = collectListenerErrors(lb)
  const starting = lb.start()
  await waitFor(() => errors.length >= 2, { what: 'two failed connects' })
  await lb.stop()
  await assert.rejects(starting, (err) => {
    assert.match(err.message, /^stopped before the listener opened \(last attempt: .*ECONNREFUSED/)
    assert.equal(err.cause.code, 'ECONNREFUSED')
    return true
  })
})
