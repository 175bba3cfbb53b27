'use strict'
// Both UDP receive paths of the master (udpReceiver 'native': recvmmsg()
// into batch entries; 'dgram': node:dgram, one message per datagram) end to
// end, with real sockets and forked workers, under the same assertions.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('node:crypto')
const { execFile, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const dgram = require('node:dgram')
const { once } = require('node:events')
const { LoadBalancer, InvalidOptionError } = require('../..')
const NativeUdpSocket = require('../../lib/protocols/native-udp-socket')
const { fnv1a } = require('../../lib/master/distribution')
const { accountedFor } = require('../../lib/master/counters')
const { writeStats, readStats, buildSnapshot, computeRates } = require('../../app/stats-file')
const { render: renderStatus } = require('../../app/commands/status')
const { frame: topFrame } = require('../../app/commands/top')
const { entryKeyHash } = require('../../lib/shared/batch-codec')
const { writeEntry, entrySize, entryEnd } = require('../../lib/shared/batch-codec')
const { COUNTING, HOST, fixture, startLb, settled, udpSocket, sendDatagram, sendPaced, waitFor, lines } = require('../helpers/lb')
const { removeDir } = require('../helpers/temp-dir')

const RECEIVERS = ['native', 'dgram']
const RECORDER = fixture('datagram-recorder-worker.js')
const IPV4_MAX = 65507 // 65,535 − 20 (IPv4 header) − 8 (UDP header)
const IPV6_MAX = 65527 // 65,535 (payload length) − 8 (UDP header)

const sha256 = (data) => crypto.createHash('sha256').update(data).digest('hex')

// Fails the test instead of hanging it when `promise` never settles.
function within (promise, ms, what) {
  let timer
  const timeout = new Promise((resolve, reject) => { timer = setTimeout(() => reject(new Error(`${what} did not settle in ${ms} ms`)), ms) })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** Each worker's stats, indexed by slot. */
async function workersBySlot (lb) {
  const { workers } = await lb.stats()
  const bySlot = []
  for (const w of workers) bySlot[w.slot] = w
  assert.equal(bySlot.filter(Boolean).length, lb.options.instances, 'one worker per slot')
  return bySlot
}

/** Every record of the recorder fixture, with the slot of the worker that made it. */
async function allRecords (lb) {
  return (await workersBySlot(lb)).flatMap((w) => w.custom.records.map((r) => ({ ...r, slot: w.slot })))
}

/** A UDP socket of `type` bound to an ephemeral port on `host`, closed by t.after. */
async function boundSocket (t, type, host) {
  const socket = dgram.createSocket(type)
  t.after(() => new Promise((resolve) => socket.close(resolve)).catch(() => {}))
  socket.bind(0, host)
  await once(socket, 'listening')
  return socket
}

function sendTo (socket, port, host, data) {
  return new Promise((resolve, reject) => socket.send(data, port, host, (err) => err ? reject(err) : resolve()))
}

/** Sends one datagram at a time to the balancer, each received before the next goes. */
async function sendEach (lb, socket, host, messages) {
  for (const data of messages) {
    const expected = lb.summary().received + 1
    await sendTo(socket, lb.address().port, host, data)
    await waitFor(() => lb.summary().received >= expected, { what: `datagram ${expected} received` })
  }
}

// Unique payloads of the sizes that matter: empty, tiny, every byte value,
// a typical MTU-sized one, one past the loopback-friendly sizes, the maximum.
function payloads (max) {
  return [
    Buffer.alloc(0),
    Buffer.from('a'),
    Buffer.from('hello, collector'),
    Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
    crypto.randomBytes(1472),
    crypto.randomBytes(9000),
    crypto.randomBytes(max)
  ]
}

/**
 * Asserts that every sent datagram reached exactly one worker, whole, with
 * the sender's rinfo, and that each worker saw its share in send order.
 */
function assertDelivered (records, sent, rinfoOf) {
  assert.equal(records.length, sent.length, 'one record per datagram sent')
  const lastIndex = new Map()
  for (const [i, data] of sent.entries()) {
    const hash = sha256(data)
    const matches = records.filter((r) => r.sha256 === hash && r.length === data.length)
    assert.equal(matches.length, 1, `datagram ${i} (${data.length} bytes) arrived exactly once, intact`)
    const [record] = matches
    assert.equal(record.isBuffer, true, `datagram ${i}: data is a Buffer`)
    assert.equal(record.first, data.length > 0 ? data[0] : -1)
    assert.deepEqual(record.rinfo, { ...rinfoOf(i), size: data.length }, `datagram ${i}: rinfo`)
    assert.ok(!(lastIndex.get(record.slot) > i), `slot ${record.slot} saw datagram ${i} after ${lastIndex.get(record.slot)}`)
    lastIndex.set(record.slot, i)
  }
}

test('the native receiver is built here, and udpReceiver \'auto\' picks it', async (t) => {
  assert.equal(NativeUdpSocket.available, true, `native/build/udp_receiver.node does not load: ${NativeUdpSocket.unavailableReason()}`)
  const lb = await startLb(t, { instances: 1 })
  assert.equal(lb.options.udpReceiver, 'auto')
  assert.equal(lb.summary().receiver, 'native')
  assert.equal(lb.receiver(), 'native')
  assert.ok(lb.listener.socket instanceof NativeUdpSocket)
})

for (const receiver of RECEIVERS) {
  test(`${receiver}: every datagram arrives intact with the sender's rinfo (0 bytes to the IPv4 maximum)`, async (t) => {
    const lb = await startLb(t, { instances: 2, worker: RECORDER, udpReceiver: receiver })
    assert.equal(lb.summary().receiver, receiver)
    assert.deepEqual(lb.address(), { address: HOST, family: 'IPv4', port: lb.address().port })
    assert.ok(lb.address().port > 0)
    const socket = await udpSocket(t)
    const sent = payloads(IPV4_MAX)
    await sendEach(lb, socket, HOST, sent)
    const s = await settled(lb)
    assert.equal(s.received, sent.length)
    assert.equal(s.processed, sent.length)
    assert.equal(s.dropped.total, 0)
    assert.equal(s.bytes, sent.reduce((n, d) => n + d.length, 0), 'summary().bytes counts data bytes only')
    assert.equal(s.receiver, receiver)
    const port = socket.address().port
    assertDelivered(await allRecords(lb), sent, () => ({ address: HOST, family: 'IPv4', port }))
    if (receiver === 'native') assert.equal(lb.listener.socket.counters().truncated, 0)
  })
}

for (const receiver of RECEIVERS) {
  test(`${receiver}: a queued burst larger than one hand-over (1 MiB) arrives intact and in order`, async (t) => {
    const lb = await startLb(t, { instances: 2, worker: RECORDER, udpReceiver: receiver })
    const socket = await udpSocket(t)
    // Loopback sends complete without yielding to the event loop, so all of
    // them wait in the socket's queue and are read in one wake-up.
    const sent = Array.from({ length: 40 }, (_, i) => {
      const data = crypto.randomBytes(60000)
      data.writeUInt32BE(i, 0)
      return data
    })
    for (const data of sent) await sendDatagram(socket, lb.address().port, data)
    assert.equal(lb.summary().received, 0, 'nothing read while sending')
    await waitFor(() => lb.summary().received === sent.length, { what: 'the burst to be received' })
    const s = await settled(lb)
    assert.equal(s.processed, sent.length)
    assert.equal(s.dropped.total, 0)
    assert.equal(s.bytes, 40 * 60000)
    if (receiver === 'native') {
      // 2.4 MB read in at most two wake-ups: at least one of them handed
      // over more than the 1 MiB output buffer holds, in several calls.
      const { wakeups, truncated } = lb.listener.socket.counters()
      assert.ok(wakeups >= 1 && wakeups <= 2, `${wakeups} wake-ups`)
      assert.equal(truncated, 0)
    }
    const port = socket.address().port
    assertDelivered(await allRecords(lb), sent, () => ({ address: HOST, family: 'IPv4', port }))
  })
}

for (const receiver of RECEIVERS) {
  test(`${receiver}: a host name binds its IPv4 address`, async (t) => {
    const lb = await startLb(t, { instances: 1, host: 'localhost', udpReceiver: receiver })
    assert.equal(lb.summary().receiver, receiver)
    assert.equal(lb.address().address, HOST)
    assert.equal(lb.address().family, 'IPv4')
    const socket = await udpSocket(t)
    await sendPaced(lb, socket, lines(3))
    assert.equal((await settled(lb)).processed, 3)
  })
}

test('::1 can be bound on this machine (the IPv6 tests below need it)', async (t) => {
  const socket = await boundSocket(t, 'udp6', '::1')
  assert.deepEqual(socket.address(), { address: '::1', family: 'IPv6', port: socket.address().port })
})

for (const receiver of RECEIVERS) {
  test(`${receiver}: host ::1 receives IPv6 datagrams (0 bytes to the IPv6 maximum), rinfo IPv6 ::1, hash by address:port`, async (t) => {
    const instances = 3
    const lb = await startLb(t, { instances, host: '::1', distribution: 'hash', worker: RECORDER, udpReceiver: receiver })
    assert.equal(lb.summary().receiver, receiver)
    const address = lb.address()
    assert.deepEqual(address, { address: '::1', family: 'IPv6', port: address.port })
    const senders = []
    for (let i = 0; i < 4; i++) senders.push(await boundSocket(t, 'udp6', '::1'))
    const sent = []
    const from = []
    for (const [n, socket] of senders.entries()) {
      const part = n === 0 ? payloads(IPV6_MAX) : [Buffer.from(`sender ${n}`), crypto.randomBytes(100)]
      await sendEach(lb, socket, '::1', part)
      for (const data of part) { sent.push(data); from.push(socket.address().port) }
    }
    const s = await settled(lb)
    assert.equal(s.processed, sent.length)
    assert.equal(s.dropped.total, 0)
    const records = await allRecords(lb)
    assertDelivered(records, sent, (i) => ({ address: '::1', family: 'IPv6', port: from[i] }))
    for (const record of records) {
      const slot = fnv1a(`::1:${record.rinfo.port}`) % instances
      assert.equal(record.slot, slot, `::1:${record.rinfo.port} belongs on slot ${slot}`)
    }
  })
}

for (const receiver of RECEIVERS) {
  test(`${receiver}: round-robin gives each of 3 workers exactly k of 3·k datagrams`, async (t) => {
    const K = 40
    const lb = await startLb(t, { instances: 3, udpReceiver: receiver })
    assert.equal(lb.summary().receiver, receiver)
    const socket = await udpSocket(t)
    await sendPaced(lb, socket, lines(3 * K))
    const s = await settled(lb)
    assert.equal(s.received, 3 * K)
    assert.equal(s.dropped.total, 0)
    const workers = await workersBySlot(lb)
    assert.deepEqual(workers.map((w) => w.processed), [K, K, K])
    assert.deepEqual(workers.map((w) => w.custom.seen), [K, K, K])
  })
}

for (const receiver of RECEIVERS) {
  test(`${receiver}: hash puts each sender on slot fnv1a(address:port) % instances`, async (t) => {
    const instances = 3
    const perSender = 4
    const lb = await startLb(t, { instances, distribution: 'hash', worker: RECORDER, udpReceiver: receiver })
    assert.equal(lb.summary().receiver, receiver)
    const senders = []
    for (let i = 0; i < 12; i++) senders.push(await udpSocket(t))
    for (const [n, socket] of senders.entries()) await sendPaced(lb, socket, lines(perSender, `s${n}-`))
    const s = await settled(lb)
    assert.equal(s.processed, senders.length * perSender)
    const records = await allRecords(lb)
    const slots = new Set()
    for (const socket of senders) {
      const key = `${HOST}:${socket.address().port}`
      const own = records.filter((r) => r.rinfo.port === socket.address().port)
      assert.equal(own.length, perSender, `${key} sent ${perSender}`)
      const expected = fnv1a(key) % instances
      assert.deepEqual(own.map((r) => r.slot), own.map(() => expected), `every datagram of ${key} on slot ${expected}`)
      slots.add(expected)
    }
    assert.ok(slots.size >= 2, 'the senders spread over several slots')
  })
}

test('entryKeyHash(entry) equals fnv1a("<address>:<port>") for every address form and port width', () => {
  const addresses = ['127.0.0.1', '10.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', '2001:db8::ff00:42:8329',
    '::ffff:192.0.2.128', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', '']
  const ports = [0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 1001, 5005, 9999, 10000, 10001, 12345, 49152, 65534, 65535]
  const data = Buffer.from('payload')
  let checked = 0
  for (const address of addresses) {
    const buf = Buffer.alloc(ports.length * entrySize(data, address) + 1)
    let offset = 1 // entries need not start at 0
    for (const port of ports) {
      const next = writeEntry(buf, offset, data, address, port)
      assert.equal(entryEnd(buf, offset), next)
      assert.equal(entryKeyHash(buf, offset), fnv1a(`${address}:${port}`), `${address}:${port}`)
      offset = next
      checked++
    }
  }
  assert.equal(checked, addresses.length * ports.length)
  // And the hash tells entries apart: not a constant.
  const one = Buffer.alloc(32)
  const two = Buffer.alloc(32)
  writeEntry(one, 0, data, '127.0.0.1', 1000)
  writeEntry(two, 0, data, '127.0.0.1', 1001)
  assert.notEqual(entryKeyHash(one, 0), entryKeyHash(two, 0))
})

for (const receiver of RECEIVERS) {
  test(`${receiver}: a subclass's distribute() gets each datagram as { data, rinfo } and its choice is used`, async (t) => {
    class ByFirstByte extends LoadBalancer {
      seen = []
      distribute (workers, message) {
        this.seen.push(message)
        return workers.find((w) => w.slot === message.data[0])
      }
    }
    const lb = await startLb(t, { instances: 3, worker: RECORDER, udpReceiver: receiver }, ByFirstByte)
    assert.equal(lb.summary().receiver, receiver)
    const socket = await udpSocket(t)
    const perSlot = [4, 7, 10]
    const sent = []
    for (const [slot, n] of perSlot.entries()) {
      for (let i = 0; i < n; i++) sent.push(Buffer.concat([Buffer.from([slot]), Buffer.from(`#${sent.length}`)]))
    }
    // Interleave the slots, so the choice is per datagram, not per run.
    sent.sort((a, b) => sha256(a).localeCompare(sha256(b)))
    await sendPaced(lb, socket, sent, { chunk: 7 })
    const s = await settled(lb)
    assert.equal(s.processed, sent.length)
    const workers = await workersBySlot(lb)
    assert.deepEqual(workers.map((w) => w.processed), perSlot)
    for (const w of workers) assert.ok(w.custom.records.every((r) => r.first === w.slot), `slot ${w.slot} got only its datagrams`)
    // The messages distribute() saw, kept until now: their bytes were not
    // reused for later datagrams.
    assert.equal(lb.seen.length, sent.length)
    const port = socket.address().port
    for (const [i, message] of lb.seen.entries()) {
      assert.ok(Buffer.isBuffer(message.data), 'data is a Buffer')
      assert.deepEqual(message.data, sent[i], `datagram ${i}`)
      assert.deepEqual(message.rinfo, { address: HOST, family: 'IPv4', port, size: sent[i].length })
    }
  })
}

for (const receiver of RECEIVERS) {
  test(`${receiver}: a subclass's key() with hash distribution routes by its key`, async (t) => {
    const instances = 3
    class ByTag extends LoadBalancer {
      keyed = []
      key (message) {
        this.keyed.push(message)
        return message.data.toString().split('|')[0]
      }
    }
    const tags = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel']
    const slotOf = (tag) => fnv1a(tag) % instances
    assert.ok(new Set(tags.map(slotOf)).size >= 2, 'the tags span several slots (else this test proves nothing)')
    const lb = await startLb(t, { instances, distribution: 'hash', worker: RECORDER, udpReceiver: receiver }, ByTag)
    const socket = await udpSocket(t)
    const sent = []
    for (let i = 0; i < 3; i++) for (const tag of tags) sent.push(`${tag}|${i}`)
    await sendPaced(lb, socket, sent)
    const s = await settled(lb)
    assert.equal(s.processed, sent.length)
    const records = await allRecords(lb)
    assert.equal(records.length, sent.length)
    for (const record of records) {
      const tag = record.head.split('|')[0]
      assert.equal(record.slot, slotOf(tag), `${record.head} on the slot of its key`)
    }
    assert.deepEqual(lb.keyed.map((m) => m.data.toString()), sent)
    const port = socket.address().port
    for (const message of lb.keyed) assert.deepEqual(message.rinfo, { address: HOST, family: 'IPv4', port, size: message.data.length })
  })
}

for (const receiver of RECEIVERS) {
  test(`${receiver}: past maxInFlight the excess is dropped as queueFull, with exact accounting`, async (t) => {
    const lb = await startLb(t, { instances: 2, maxInFlight: 5, workerOptions: { delayMs: 10 }, udpReceiver: receiver })
    assert.equal(lb.summary().receiver, receiver)
    const socket = await udpSocket(t)
    const total = 200
    for (const data of lines(total)) await sendDatagram(socket, lb.address().port, data)
    await waitFor(() => lb.summary().received === total, { what: 'the burst to be received' })
    const s = await settled(lb)
    assert.ok(s.dropped.queueFull > 0, 'some datagrams found every worker saturated')
    assert.ok(s.processed >= 10, 'each worker took at least maxInFlight')
    assert.equal(s.processed + s.dropped.queueFull, total)
    assert.equal(s.dropped.total, s.dropped.queueFull)
    assert.equal(s.received, s.processed + s.failed + s.dropped.total)
    assert.equal(s.dispatched, s.processed)
    const workers = await workersBySlot(lb)
    assert.equal(workers.reduce((n, w) => n + w.custom.seen, 0), s.processed)
    await lb.stop()
    const end = lb.summary()
    assert.equal(end.received, end.processed + end.failed + end.dropped.total)
  })
}

for (const receiver of RECEIVERS) {
  test(`${receiver}: a busy port rejects start() with ERR_LISTEN naming the port (the native path's error too)`, async (t) => {
    const occupier = await udpSocket(t)
    const lb = new LoadBalancer({ worker: COUNTING, instances: 1, host: HOST, port: occupier.address().port, retry: false, udpReceiver: receiver })
    t.after(() => lb.stop())
    await assert.rejects(lb.start(), (err) => err.code === 'ERR_LISTEN' && err.cause.code === 'EADDRINUSE' && err.message.includes(`:${occupier.address().port} (udp): address already in use`))
    assert.equal(lb.address(), null)
    assert.equal(lb.summary().receiver, null)
    assert.equal(lb.summary().state, 'stopped')
  })
}

for (const receiver of RECEIVERS) {
  test(`${receiver}: a socket error on a running listener reopens it on the same port`, async (t) => {
    const lb = await startLb(t, { instances: 1, retryDelay: 50, udpReceiver: receiver })
    const port = lb.address().port
    const errors = []
    lb.on('listenerError', (err, delay) => errors.push({ code: err.code, delay }))
    const sender = await udpSocket(t)
    await sendPaced(lb, sender, lines(10, 'before'))
    const reopened = once(lb, 'listening')
    const old = lb.listener
    old.socket.emit('error', Object.assign(new Error('forced'), { code: 'EFORCED' }))
    await within(reopened, 5000, 'reopen')
    assert.notEqual(lb.listener, old)
    assert.throws(() => old.socket.address(), { code: 'ERR_SOCKET_DGRAM_NOT_RUNNING' }, 'the broken socket was closed')
    assert.equal(lb.summary().receiver, receiver)
    assert.deepEqual(errors, [{ code: 'EFORCED', delay: 50 }])
    assert.equal(lb.address().port, port)
    assert.equal(lb.summary().restarts.listener, 1)
    await sendPaced(lb, sender, lines(10, 'after'))
    const stats = await settled(lb)
    assert.equal(stats.received, 20)
    assert.equal(stats.processed, 20)
  })
}

test('udpReceiver: auto, native and dgram are accepted; anything else is an InvalidOptionError', () => {
  for (const udpReceiver of ['auto', 'native', 'dgram']) {
    assert.equal(new LoadBalancer({ worker: COUNTING, udpReceiver }).options.udpReceiver, udpReceiver)
  }
  for (const udpReceiver of ['kernel', '', 'Native', 1, null]) {
    assert.throws(() => new LoadBalancer({ worker: COUNTING, udpReceiver }), (err) => {
      assert.ok(err instanceof InvalidOptionError, `${JSON.stringify(udpReceiver)}: ${err}`)
      assert.equal(err.code, 'ERR_INVALID_OPTION')
      assert.equal(err.option, 'udpReceiver')
      assert.match(err.message, /udpReceiver/)
      return true
    })
  }
})

// After stop(): every one of `total` datagrams received and processed, none dropped or lost.
function assertStoppedWithAll (lb, total) {
  const s = lb.summary()
  assert.equal(s.state, 'stopped')
  assert.equal(s.received, total)
  assert.equal(s.processed, total)
  assert.equal(s.dropped.total, 0)
  assert.equal(s.lost, 0)
  assert.equal(s.inFlight, 0)
  assert.equal(lb.address(), null)
}

for (const receiver of RECEIVERS) {
  test(`${receiver}: stop() with a received burst still in flight processes every datagram`, async (t) => {
    const total = 300
    const lb = await startLb(t, { instances: 2, workerOptions: { delayMs: 2 }, udpReceiver: receiver })
    assert.equal(lb.summary().receiver, receiver)
    const socket = await udpSocket(t)
    for (const data of lines(total)) await sendDatagram(socket, lb.address().port, data)
    await waitFor(() => lb.summary().received === total, { what: 'the burst to be received' })
    assert.ok(lb.summary().inFlight > 0, 'the slow workers still hold messages when stop() is called')
    await lb.stop()
    assertStoppedWithAll(lb, total)
  })
}

// A send to loopback that completes synchronously calls back on the next
// tick, so the loop below never gives the master a poll phase: all `total`
// datagrams sit in the socket's receive queue when stop() is called. The
// listener must read them before it closes (a sender in another process
// hits the same: whatever the kernel holds at stop() time was received).
for (const receiver of RECEIVERS) {
  test(`${receiver}: stop() right after the last send processes every datagram already queued for the socket`, async (t) => {
    const total = 300
    const lb = await startLb(t, { instances: 2, workerOptions: { delayMs: 1 }, udpReceiver: receiver })
    assert.equal(lb.summary().receiver, receiver)
    const socket = await udpSocket(t)
    for (const data of lines(total)) await sendDatagram(socket, lb.address().port, data)
    assert.equal(lb.summary().received, 0, 'every datagram is still queued in the kernel when stop() begins')
    await lb.stop()
    assertStoppedWithAll(lb, total)
  })
}

// A machine without a C compiler has no addon. Mocked the one way that
// cannot happen here: a child process whose loader refuses the addon file.
test('without the addon, udpReceiver auto falls back to dgram and native is refused with the reason', async (t) => {
  const root = path.join(__dirname, '..', '..')
  // A file, not \`node -e\`: forked workers inherit execArgv, -e included.
  const scriptFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'no-addon-')), 'no-addon.js')
  t.after(() => removeDir(path.dirname(scriptFile)))
  const script = `
    const Module = require('node:module')
    const { OUTPUT } = require(${JSON.stringify(path.join(root, 'native', 'build'))})
    const resolve = Module._resolveFilename
    Module._resolveFilename = function (request, ...rest) {
      if (request === OUTPUT) throw Object.assign(new Error('Cannot find module ' + OUTPUT), { code: 'MODULE_NOT_FOUND' })
      return resolve.call(this, request, ...rest)
    }
    const { LoadBalancer } = require(${JSON.stringify(root)})
    const worker = ${JSON.stringify(COUNTING)}
    let refused = null
    try { new LoadBalancer({ worker, instances: 1, udpReceiver: 'native' }) } catch (err) { refused = { code: err.code, message: err.message } }
    const lb = new LoadBalancer({ worker, instances: 1, udpReceiver: 'auto' })
    lb.start().then(async () => {
      const receiver = lb.summary().receiver
      await lb.stop()
      process.stdout.write(JSON.stringify({ refused, receiver }))
    })
  `
  fs.writeFileSync(scriptFile, script)
  const stdout = await new Promise((resolve, reject) => {
    execFile(process.execPath, [scriptFile], (err, out) => err ? reject(err) : resolve(out))
  })
  const { refused, receiver } = JSON.parse(stdout)
  assert.equal(receiver, 'dgram')
  assert.equal(refused.code, 'ERR_INVALID_OPTION')
  assert.match(refused.message, /needs the native receiver, which is not built \(Cannot find module .*udp_receiver\.node\)/)
})

// What an operator sees: the stats file the collector writes, `collector
// status` and `collector top` read from it.
async function assertShownByCli (t, lb, kernel) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kernel-drops-'))
  t.after(() => removeDir(dir))
  const stats = await lb.stats()
  await writeStats(dir, buildSnapshot({ name: 'stalled', collector: 'test', pid: process.pid, interval: 1000 }, stats, computeRates(stats, null, 0)))
  const snapshot = await readStats('stalled', dir)
  assert.equal(snapshot.stats.dropped.kernel, kernel, 'the stats file has dropped.kernel')
  assert.match(renderStatus(snapshot), new RegExp(`dropped by reason: kernel ${kernel}\\b`))
  const screen = (await topFrame(dir, { all: true })).split('\n')
  const columns = screen.find((line) => line.startsWith('COLLECTOR')).split(/\s+/)
  const row = screen.find((line) => line.startsWith('stalled')).split(/\s+/)
  assert.equal(row[columns.indexOf('KERNEL') - 2], String(kernel), `top's KERNEL column:\n${screen.join('\n')}`)
}

// A sender in another process, run with spawnSync: the master's event loop
// is stopped for as long as it sends, as when it is blocked or SIGSTOPped,
// so everything past the socket's receive buffer is dropped by the kernel.
const BURST_SENDER = `
const dgram = require('node:dgram')
const [port, count, size] = process.argv.slice(1).map(Number)
const socket = dgram.createSocket('udp4')
let done = 0
for (let i = 0; i < count; i++) {
  const data = Buffer.alloc(size, 120)
  data.writeUInt32BE(i, 0)
  socket.send(data, port, '127.0.0.1', () => { if (++done === count) socket.close() })
}
`

for (const receiver of RECEIVERS) {
  test(`${receiver}: datagrams the kernel drops while the master is stalled are counted as dropped.kernel`, async (t) => {
    const sent = 4000
    const lb = await startLb(t, { instances: 1, recvBufferSize: 65536, udpReceiver: receiver })
    assert.equal(lb.summary().dropped.kernel, 0)
    const result = spawnSync(process.execPath, ['-e', BURST_SENDER, String(lb.address().port), String(sent), '400'], { encoding: 'utf8' })
    assert.equal(result.status, 0, result.stderr)
    const s = await waitFor(() => {
      const summary = lb.summary()
      return summary.received + summary.dropped.kernel === sent && accountedFor(summary) && summary
    }, { what: `received + dropped.kernel to reach ${sent}` })
    assert.ok(s.dropped.kernel > 0, 'a burst ten times the receive buffer overflowed it')
    assert.ok(s.received > 0, 'what the buffer held was read after the stall')
    assert.equal(s.processed, s.received)
    assert.equal(s.dropped.total, s.dropped.kernel, `the only drops are the kernel's: ${JSON.stringify(s.dropped)}`)
    await assertShownByCli(t, lb, s.dropped.kernel)
    // Traffic after the stall is not lost, and the count survives the socket's close.
    const socket = await udpSocket(t)
    for (const data of lines(10)) await sendDatagram(socket, lb.address().port, data)
    await waitFor(() => lb.summary().received === s.received + 10, { what: 'the next 10 datagrams' })
    await lb.stop()
    const end = lb.summary()
    assert.equal(end.dropped.kernel, s.dropped.kernel, 'the stopped collector still reports its kernel drops')
    assert.equal(end.received + end.dropped.kernel, sent + 10)
    assert.ok(accountedFor(end))
  })
}
