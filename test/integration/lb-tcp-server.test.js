'use strict'
const { test } = require('node:test')
const assert = require('node:assert/strict')
const net = require('node:net')
const { once } = require('node:events')
const { startLb, settled, tcpClient, write, waitFor, HOST } = require('../helpers/lb')

const MAX = 200

function startTcp (t, options = {}) {
  return startLb(t, { protocol: 'tcp_server', instances: 1, maxFrameBytes: MAX, workerOptions: { record: true }, ...options })
}

async function textsOf (lb) {
  const { workers } = await lb.stats()
  return workers.flatMap((w) => w.custom.texts.map((entry) => entry.slice(entry.indexOf('|') + 1)))
}

async function sendBytewise (socket, bytes) {
  socket.setNoDelay(true)
  for (const b of bytes) await write(socket, Buffer.from([b]))
}

// Sends `bytes` coalesced (one write) and split (one byte per write) on two
// connections, and checks both deliver `expected` and count `drops`.
async function checkFraming (t, options, bytes, expected, drops = {}) {
  const lb = await startTcp(t, options)
  const whole = await tcpClient(t, lb.address().port)
  await write(whole, bytes)
  await waitFor(() => lb.summary().received >= expected.length + count(drops), { what: 'coalesced frames' })
  await settled(lb)
  assert.deepEqual(await textsOf(lb), expected)
  const split = await tcpClient(t, lb.address().port)
  await sendBytewise(split, bytes)
  await waitFor(() => lb.summary().received >= 2 * (expected.length + count(drops)), { what: 'split frames' })
  const stats = await settled(lb)
  assert.deepEqual(await textsOf(lb), [...expected, ...expected])
  for (const [reason, n] of Object.entries(drops)) assert.equal(stats.dropped[reason], 2 * n, reason)
  assert.equal(stats.dropped.total, 2 * count(drops))
  assert.equal(stats.events.connections, 2)
  return lb
}

const count = (drops) => Object.values(drops).reduce((a, b) => a + b, 0)

function prefixed (bytes, frames) {
  return Buffer.concat(frames.map((f) => {
    const head = Buffer.alloc(bytes)
    if (bytes === 2) head.writeUInt16BE(Buffer.byteLength(f))
    else head.writeUInt32BE(Buffer.byteLength(f))
    return Buffer.concat([head, Buffer.from(f)])
  }))
}

test('newline framing, LF and CRLF', async (t) => {
  await checkFraming(t, { framing: 'newline' }, Buffer.from('one\ntwo\r\nthree\n'), ['one', 'two', 'three'])
})

test('newline: an oversize line is dropped and counted, the connection keeps working', async (t) => {
  const bytes = Buffer.from(`a\n${'x'.repeat(MAX + 50)}\nb\n`)
  await checkFraming(t, { framing: 'newline' }, bytes, ['a', 'b'], { oversize: 1 })
})

test('octet-counting, with a bad header counted as badFrame and resynchronised', async (t) => {
  const bytes = Buffer.from('3 one5 threenot a header\n4 four')
  await checkFraming(t, { framing: 'octet-counting' }, bytes, ['one', 'three', 'four'], { badFrame: 1 })
})

test('auto framing: octet-counted and newline frames mixed on one connection', async (t) => {
  const bytes = Buffer.from('<13>plain\n11 <14>counted<15>crlf\r\n')
  await checkFraming(t, { framing: 'auto' }, bytes, ['<13>plain', '<14>counted', '<15>crlf'])
})

test('length-prefixed:16 with an oversize frame skipped', async (t) => {
  const bytes = prefixed(2, ['alpha', 'y'.repeat(MAX + 1), 'beta'])
  await checkFraming(t, { framing: 'length-prefixed:16' }, bytes, ['alpha', 'beta'], { oversize: 1 })
})

test('length-prefixed (32 bit)', async (t) => {
  await checkFraming(t, { framing: 'length-prefixed' }, prefixed(4, ['alpha', 'beta', 'gamma']), ['alpha', 'beta', 'gamma'])
})

test('a user framing function', async (t) => {
  const semicolon = (buf) => {
    const i = buf.indexOf(0x3b)
    return i === -1 ? null : { frame: buf.subarray(0, i), consumed: i + 1 }
  }
  await checkFraming(t, { framing: semicolon }, Buffer.from('a;bb;ccc;'), ['a', 'bb', 'ccc'])
})

test('many frames coalesced in one write', async (t) => {
  const lb = await startTcp(t, { framing: 'newline' })
  const expected = Array.from({ length: 500 }, (_, i) => `line-${i}`)
  const socket = await tcpClient(t, lb.address().port)
  await write(socket, expected.map((l) => `${l}\n`).join(''))
  await waitFor(() => lb.summary().received >= expected.length)
  await settled(lb)
  assert.deepEqual(await textsOf(lb), expected)
})

test('the last unterminated newline frame arrives when the peer closes; an unfinished counted one is partial', async (t) => {
  const lb = await startTcp(t, { framing: 'auto' })
  const a = await tcpClient(t, lb.address().port)
  a.end('<1>tail')
  const b = await tcpClient(t, lb.address().port)
  b.end('20 <2>short')
  await waitFor(() => lb.summary().received >= 2)
  const stats = await settled(lb)
  assert.deepEqual(await textsOf(lb), ['<1>tail'])
  assert.equal(stats.dropped.partial, 1)
})

// A line cut off by a reset (the sender died mid-write) was stored as if whole.
test('a newline frame cut off by a connection reset is partial, not stored as if whole; the lines before it arrive', async (t) => {
  const lb = await startTcp(t, { framing: 'auto' })
  const socket = await tcpClient(t, lb.address().port)
  await write(socket, '<13>complete line\n<13>transfer amount=10')
  await waitFor(() => lb.summary().received >= 1)
  socket.resetAndDestroy()
  await waitFor(() => lb.summary().dropped.partial === 1, { what: 'the cut line counted partial' })
  await settled(lb)
  assert.deepEqual(await textsOf(lb), ['<13>complete line'])
})

// A stop mid-line stored the unfinished line as if its sender had ended it.
test('a newline frame unfinished when the collector stops is partial, not stored as if whole', async (t) => {
  const lb = await startTcp(t, { framing: 'auto' })
  const socket = await tcpClient(t, lb.address().port)
  socket.on('error', () => {})
  await write(socket, '<13>payment of 100 EUR accepted\n<13>payment of 100 EUR reje')
  await waitFor(() => lb.summary().received >= 1)
  await waitFor(async () => (await lb.stats()).inFlight === 0)
  await lb.stop()
  const s = lb.summary()
  assert.deepEqual([s.received, s.processed, s.dropped.partial], [2, 1, 1])
})

test('maxConnections: connections over the limit are refused and counted', async (t) => {
  const lb = await startTcp(t, { maxConnections: 1 })
  const first = await tcpClient(t, lb.address().port)
  await waitFor(() => lb.summary().events.connections === 1)
  const second = net.connect({ host: HOST, port: lb.address().port })
  t.after(() => second.destroy())
  const refused = new Promise((resolve) => second.once('error', (err) => resolve(err.code)))
  assert.equal(await refused, 'ECONNRESET', 'the refused sender sees a reset')
  await waitFor(() => lb.summary().events.connectionsRejected === 1, { what: 'a rejected connection' })
  assert.deepEqual(lb.summary().eventReasons.connectionsRejected, { maxConnections: 1 })
  await write(first, 'still works\n')
  await waitFor(() => lb.summary().received === 1)
  assert.deepEqual(await textsOf(lb), ['still works'])
})

test('idleTimeout: an idle connection is ended and counted', async (t) => {
  const lb = await startTcp(t, { idleTimeout: 100 })
  const socket = await tcpClient(t, lb.address().port)
  await write(socket, 'hello\n')
  socket.resume()
  await once(socket, 'end')
  assert.equal(lb.summary().events.idleTimeouts, 1)
  await settled(lb)
  assert.deepEqual(await textsOf(lb), ['hello'])
})
