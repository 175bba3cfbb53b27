'use strict'

// No sender locks the others out of tcp_server: handshakes that never
// finish give their slots back, idle and slowloris connections are
// reclaimed when a sender needs the room, and a refused sender sees a
// reset. Each attack runs beside a good sender whose every message must be
// processed, with the counters adding up.

const test = require('node:test')
const { after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const net = require('node:net')
const tls = require('node:tls')
const { once } = require('node:events')
const { makeTlsFixtures } = require('../helpers/tls-certs')
const { startLb, settled, waitFor, write, sleep, HOST } = require('../helpers/lb')

const certs = makeTlsFixtures()
after(() => certs.cleanup())
const TLS = { tlsCert: certs.server.cert, tlsKey: certs.server.key }

function tcpLb (t, options) {
  return startLb(t, { protocol: 'tcp_server', instances: 1, ...options })
}

/** A plain TCP connection from `localAddress` that sends `bytes` (if any) and then nothing; destroyed after the test. */
async function idleConnection (t, port, { localAddress = HOST, bytes } = {}) {
  const socket = net.connect({ host: HOST, port, localAddress })
  t.after(() => socket.destroy())
  // A refused one sees a reset, possibly before its connect completes.
  const error = new Promise((resolve) => socket.on('error', resolve))
  await Promise.race([once(socket, 'connect'), error])
  if (bytes && !socket.destroyed) socket.write(bytes)
  return socket
}

/** A good TLS sender from `localAddress`: connects, sends `count` lines, ends; resolves with its client-side error code, if any. */
function tlsSender (port, count, { localAddress = HOST, prefix = 'good' } = {}) {
  return new Promise((resolve) => {
    let error
    const socket = tls.connect({ host: HOST, port, localAddress, ca: fs.readFileSync(certs.ca.cert), servername: 'localhost' })
    socket.once('secureConnect', () => {
      let lines = ''
      for (let i = 0; i < count; i++) lines += `${prefix} ${i}\n`
      socket.end(lines)
    })
    socket.on('error', (err) => { error = error || err.code })
    socket.once('close', () => resolve({ error }))
  })
}

/** A good plain sender: one connection, `count` lines, ended. */
async function plainSender (t, port, count, { localAddress = HOST } = {}) {
  const socket = net.connect({ host: HOST, port, localAddress })
  t.after(() => socket.destroy())
  await once(socket, 'connect')
  let lines = ''
  for (let i = 0; i < count; i++) lines += `good ${i}\n`
  await write(socket, lines)
  socket.end()
  return socket
}

function assertAllCounted (s, processed) {
  assert.equal(s.processed, processed, JSON.stringify({ received: s.received, processed: s.processed, dropped: s.dropped }))
  assert.equal(s.received, s.processed + s.failed + s.dropped.total)
}

test('silent TLS connections give their slots back at the handshake timeout: a sender from the same address then gets in', async (t) => {
  const lb = await tcpLb(t, { ...TLS, maxConnectionsPerSource: 4, tlsHandshakeTimeout: 300, reclaimIdleAfter: 0 })
  const { port } = lb.address()
  const silent = []
  for (let i = 0; i < 6; i++) silent.push(await idleConnection(t, port))
  await waitFor(() => lb.summary().eventReasons.connectionsRejected?.perSourceLimit === 2, { what: 'the two over the limit refused' })
  // The four that got slots never start a handshake: closed at the timeout, by the collector.
  await Promise.all(silent.map((socket) => socket.destroyed ? null : once(socket, 'close')))
  assert.equal(lb.summary().eventReasons.tlsRejected.handshakeTimeout, 4)
  const { error } = await tlsSender(port, 100)
  assert.equal(error, undefined)
  assertAllCounted(await settled(lb), 100)
})

test('a partial ClientHello holds nothing past the handshake timeout', async (t) => {
  const lb = await tcpLb(t, { ...TLS, maxConnectionsPerSource: 3, tlsHandshakeTimeout: 300, reclaimIdleAfter: 0 })
  const { port } = lb.address()
  // The first bytes of a real ClientHello: a handshake record header and the start of the message.
  const hello = await new Promise((resolve) => {
    const capture = net.createServer((socket) => socket.once('data', (data) => { resolve(data); socket.destroy(); capture.close() }))
    capture.listen(0, HOST, () => tls.connect({ host: HOST, port: capture.address().port, rejectUnauthorized: false }).on('error', () => {}))
  })
  const partial = []
  for (let i = 0; i < 3; i++) partial.push(await idleConnection(t, port, { bytes: hello.subarray(0, 40) }))
  await Promise.all(partial.map((socket) => once(socket, 'close')))
  assert.equal(lb.summary().eventReasons.tlsRejected.handshakeTimeout, 3)
  const { error } = await tlsSender(port, 50)
  assert.equal(error, undefined)
  assertAllCounted(await settled(lb), 50)
})

test('under pressure a silent handshake is reclaimed before its timeout: the new sender evicts it, not the other way round', async (t) => {
  const lb = await tcpLb(t, { ...TLS, maxConnectionsPerSource: 4, tlsHandshakeTimeout: 60000, reclaimIdleAfter: 200 })
  const { port } = lb.address()
  for (let i = 0; i < 4; i++) await idleConnection(t, port)
  await sleep(300)
  const { error } = await tlsSender(port, 100)
  assert.equal(error, undefined)
  const s = await settled(lb)
  assertAllCounted(s, 100)
  assert.deepEqual(s.eventReasons.connectionsEvicted, { perSourceLimit: 1 })
  assert.equal(s.events.connectionsRejected, undefined)
})

test('slowloris from one address: idle connections are reclaimed for a good sender of that address, fresh ones are not', async (t) => {
  const lb = await tcpLb(t, { maxConnectionsPerSource: 4, reclaimIdleAfter: 200 })
  const { port } = lb.address()
  const idle = []
  for (let i = 0; i < 4; i++) idle.push(await idleConnection(t, port, { bytes: i % 2 ? 'never ends' : undefined }))
  // Fresh: within the grace every slot is still its holder's, so a fifth is refused with a reset.
  const early = net.connect({ host: HOST, port })
  assert.equal(await new Promise((resolve) => early.once('error', (err) => resolve(err.code))), 'ECONNRESET')
  await sleep(300)
  for (let round = 0; round < 3; round++) await plainSender(t, port, 1000)
  const s = await settled(lb)
  assertAllCounted(s, 3000)
  assert.equal(s.eventReasons.connectionsEvicted.perSourceLimit >= 1, true, JSON.stringify(s.eventReasons))
  assert.deepEqual(s.eventReasons.connectionsRejected, { perSourceLimit: 1 })
  // The two evicted that held half a line: each partial frame counted.
  assert.equal(s.dropped.partial, idle.filter((socket, i) => i % 2 && socket.destroyed).length)
})

test('slowloris from many addresses fills max-connections: a good sender on another address evicts the longest idle and loses nothing', async (t) => {
  const lb = await tcpLb(t, { maxConnections: 8, maxConnectionsPerSource: 32, reclaimIdleAfter: 200 })
  const { port } = lb.address()
  for (let i = 0; i < 12; i++) await idleConnection(t, port, { localAddress: `127.0.0.${2 + (i % 6)}` })
  await waitFor(() => lb.summary().eventReasons.connectionsRejected?.maxConnections === 4, { what: 'the four over the limit refused' })
  await sleep(300)
  const good = await plainSender(t, port, 2000)
  await once(good, 'close')
  const s = await settled(lb)
  assertAllCounted(s, 2000)
  assert.deepEqual(s.eventReasons.connectionsEvicted, { maxConnections: 1 })
})

test('a connection that never completes its frame is closed at frameTimeout; one idle between frames keeps its connection', async (t) => {
  const lb = await tcpLb(t, { frameTimeout: 400, reclaimIdleAfter: 0 })
  const { port } = lb.address()
  const patient = await idleConnection(t, port, { bytes: 'first\n' })
  const dripping = await idleConnection(t, port, { bytes: 'a' })
  const drip = setInterval(() => dripping.write('b'), 100)
  t.after(() => clearInterval(drip))
  await once(dripping, 'close')
  clearInterval(drip)
  assert.equal(lb.summary().events.frameTimeouts, 1)
  await sleep(300)
  await write(patient, 'second\n')
  await waitFor(() => lb.summary().received === 3, { what: 'the second frame' })
  const s = await settled(lb)
  assertAllCounted(s, 2)
  assert.equal(s.dropped.partial, 1)
  assert.equal(patient.destroyed, false)
})

test('a long-idle sender keeps its connection while nobody needs the slot', async (t) => {
  const lb = await tcpLb(t, { maxConnectionsPerSource: 2, reclaimIdleAfter: 100 })
  const { port } = lb.address()
  const quiet = await idleConnection(t, port, { bytes: 'hello\n' })
  await sleep(400)
  await write(quiet, 'again\n')
  await waitFor(() => lb.summary().received === 2, { what: 'the frame after the quiet time' })
  const s = await settled(lb)
  assertAllCounted(s, 2)
  assert.equal(s.events.connectionsEvicted, undefined)
})

test('zero-length octet-counted frames are received and dropped as empty', async (t) => {
  const lb = await tcpLb(t, { framing: 'octet-counting' })
  const socket = await idleConnection(t, lb.address().port, { bytes: '0 0 5 hello0 ' })
  const s = await waitFor(() => { const now = lb.summary(); return now.received === 4 && now.processed === 1 && now }, { what: 'four frames' })
  assert.equal(s.dropped.empty, 3)
  assertAllCounted(s, 1)
  socket.destroy()
})

// A collector whose open-file limit (here 256, as `ulimit -n` or a service
// manager sets it) is below --max-connections: past the limit accept()
// failed inside libuv, connections were closed uncounted, the good sender
// lost every line and the stats file could not be written (EMFILE). The
// bound is lowered to what the limit holds, said at start, and the limits
// that count and evict act there.
test('an open-file limit below --max-connections: the bound follows it, said at start; a flood of idle connections is evicted for a good sender, nothing uncounted', { timeout: 90000 }, async (t) => {
  const path = require('node:path')
  const os = require('node:os')
  const { spawn } = require('node:child_process')
  const { readStats } = require('../../app/stats-file')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fdlimit-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const cli = path.join(__dirname, '..', '..', 'bin', 'collector.js')
  const echo = path.join(__dirname, '..', 'fixtures', 'echo-collector.js')
  const child = spawn('prlimit', ['--nofile=256:256', process.execPath, cli, 'run', echo, '--protocol', 'tcp_server', '--port', '0', '-i', '1', '--name', 'fdlimit', '--reclaim-idle-after', '1s', '--log-format', 'json'],
    { env: { ...process.env, COLLECTOR_STATS_DIR: dir }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.after(() => child.exitCode === null && child.kill('SIGKILL'))
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  child.stderr.on('data', (d) => { out += d })
  const ready = await waitFor(async () => { const s = await readStats('fdlimit', dir); return s && s.state === 'running' ? s : null }, { what: 'the collector to start', timeout: 30000 })
  const port = ready.stats.address.port
  const warning = out.split('\n').filter(Boolean).map((l) => { try { return JSON.parse(l) } catch { return null } }).find((l) => l && l.openFileLimit)
  assert.ok(warning, `a warning at start naming the limit: ${out}`)
  assert.equal(warning.openFileLimit, 256)
  assert.ok(warning.accepting > 0 && warning.accepting < 256 - 128, `accepting ${warning.accepting}`)
  assert.match(warning.msg, /^--max-connections 1024 does not fit the open-file limit \(256, \d+ open\): at most \d+ connections are accepted/)
  const flood = []
  for (let i = 0; i < 200; i++) flood.push(idleConnection(t, port, { localAddress: `127.0.1.${2 + (i % 10)}` }))
  await Promise.all(flood)
  await sleep(1200) // the flood's connections idle past reclaimIdleAfter
  await plainSender(t, port, 50, { localAddress: '127.0.1.100' })
  const stats = await waitFor(async () => { const s = await readStats('fdlimit', dir); return s && s.stats.processed === 50 ? s : null }, { what: 'the good sender\'s 50 lines processed', timeout: 20000 })
  const { eventReasons } = stats.stats
  assert.ok(eventReasons.connectionsRejected.maxConnections > 0, JSON.stringify(eventReasons))
  assert.ok(stats.stats.events.connectionsEvicted >= 1, 'the good sender evicted an idle one')
  assert.doesNotMatch(out, /EMFILE/)
  child.kill('SIGINT')
  await once(child, 'close')
})
