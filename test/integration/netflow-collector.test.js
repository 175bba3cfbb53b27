'use strict'
// The built-in NetFlow/IPFIX collector end to end (issue 37): softflowd
// (Debian) exports the flows of a pcap we write as NetFlow v5, v9 and IPFIX;
// the same datagrams go to the collector, on real forked workers SIGKILLed
// every 500 ms (then, in a second test, to a master SIGKILLed mid-stream
// with the disk buffer and started again), and to nfdump's nfcapd, the
// oracle. Every flow the collector stored must be one of nfdump's, each
// once, and the per-minute totals must add up to nfdump's bytes, packets
// and flows per source and destination. v9 and IPFIX templates come once
// per several datagrams: a worker's heir decodes what follows them only
// because the framework kept them (keep).

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const dgram = require('node:dgram')
const { MongoClient } = require('mongodb')
const netflow = require('../../collectors/netflow')
const { makeFlows, writeFlowPcap } = require('../helpers/netflow-pcap')
const { missingPeers, softflowdExport, nfdumpOf, fromNfdump, traffic, byKey } = require('../helpers/netflow-peers')
const { startTestCollector } = require('../helpers/collector')
const { waitFor } = require('../helpers/wait-for')
const { killLoop, restartLoop } = require('../helpers/kill-loop')
const { accountedFor } = require('../../lib/master/counters')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { tempBufferDir } = require('../helpers/buffer-dir')
const { removeDir } = require('../helpers/temp-dir')

const missing = missingPeers()
if (missing.length && process.env.CI) throw new Error(`the NetFlow collector test needs ${missing.join(', ')} (Debian softflowd, nfdump)`)
const skip = missing.length ? `needs ${missing.join(', ')} (Debian softflowd, nfdump)` : false
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
// Times as nfdump 1.7.1 reads them like us: v5 and IPFIX milliseconds (see netflow-oracle.test.js).
const EXPORTS = [
  { version: 5, args: ['-v', '5', '-a'], times: true },
  { version: 9, args: ['-v', '9', '-a'], times: false },
  { version: 10, args: ['-v', '10', '-A', 'milli'], times: true }
]

// softflowd's datagrams of each version, and what nfdump stored of them.
async function exportsAndOracle (t, flows) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netflow-collector-'))
  t.after(() => removeDir(dir))
  const pcap = path.join(dir, 'flows.pcap')
  await writeFlowPcap(pcap, makeFlows({ count: flows, start: Date.now() - 10 * 60000, spanMs: 180000 }))
  const out = []
  for (const run of EXPORTS) {
    const { datagrams } = await softflowdExport(pcap, run.args)
    const nfdump = await nfdumpOf(datagrams, fs.mkdtempSync(path.join(dir, `nfcapd-${run.version}-`)))
    out.push({ ...run, datagrams, oracle: nfdump.flows.map(fromNfdump) })
  }
  return out
}

// One socket per version (one exporter address, three source ports), the
// versions interleaved as three exporters would send, paced. `sockets`:
// those of an earlier call, for exporters that carry on from the same
// ports (their templates belong to that transport session).
async function sendAll (t, port, exports, pauseMs, sockets = exporterSockets(t, exports.length)) {
  const longest = Math.max(...exports.map((e) => e.datagrams.length))
  for (let i = 0; i < longest; i++) {
    for (const [k, e] of exports.entries()) {
      if (i >= e.datagrams.length) continue
      await new Promise((resolve, reject) => sockets[k].send(e.datagrams[i], port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
    }
    await sleep(pauseMs)
  }
}

function exporterSockets (t, n) {
  const sockets = Array.from({ length: n }, () => dgram.createSocket('udp4'))
  t.after(() => sockets.forEach((s) => s.close()))
  return sockets
}

// An exporter of its own (its own source port: a transport session): send(buf).
async function exporterSocket (t, port) {
  const socket = dgram.createSocket('udp4')
  await new Promise((resolve) => socket.bind(0, '127.0.0.1', resolve))
  t.after(() => socket.close())
  return (buf) => new Promise((resolve, reject) => socket.send(buf, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
}

async function checkStored (db, exports) {
  for (const e of exports) {
    const stored = await db.collection('flows').find({ version: e.version }).toArray()
    assert.equal(stored.length, e.oracle.length, `v${e.version}: as many flows as nfdump stored, none twice`)
    const ours = byKey(stored.map((f) => ({ ...f, first: f.first && f.first.getTime(), last: f.last && f.last.getTime() })))
    const theirs = byKey(e.oracle)
    assert.deepEqual(ours.map(traffic), theirs.map(traffic), `v${e.version}: nfdump's flows`)
    assert.deepEqual(ours.map((f) => [f.inputIf, f.outputIf]), theirs.map((f) => [f.inputIf, f.outputIf]), `v${e.version}: interfaces`)
    if (e.times) assert.deepEqual(ours.map((f) => [f.first, f.last]), theirs.map((f) => [f.first, f.last]), `v${e.version}: times`)
  }
  // Per source and destination, the minutes add up to nfdump's flows of every version.
  const want = new Map()
  for (const f of exports.flatMap((e) => e.oracle)) {
    const pair = `${f.srcAddr}|${f.dstAddr}`
    const sum = want.get(pair) || { bytes: 0, packets: 0, flows: 0 }
    want.set(pair, { bytes: sum.bytes + f.bytes, packets: sum.packets + f.packets, flows: sum.flows + 1 })
  }
  const got = new Map()
  for (const m of await db.collection('flow_minutes').find().toArray()) {
    const pair = `${m.srcAddr}|${m.dstAddr}`
    const sum = got.get(pair) || { bytes: 0, packets: 0, flows: 0 }
    got.set(pair, { bytes: sum.bytes + m.bytes, packets: sum.packets + m.packets, flows: sum.flows + m.flows })
  }
  assert.deepEqual(Object.fromEntries([...got].sort()), Object.fromEntries([...want].sort()), 'per-minute totals per source and destination')
  const exporters = await db.collection('exporters').find().sort({ version: 1 }).toArray()
  assert.deepEqual(exporters.map((x) => [x.version, x.datagrams, x.flows]), exports.map((e) => [e.version, e.datagrams.length, e.oracle.length]), 'datagrams and flows per exporter domain, each once')
  for (const x of exporters.filter((x) => x.version !== 10)) assert.deepEqual([x.lost, x.late], [0, 0], `v${x.version}: softflowd lost nothing`)
}

test('netflow: v5, v9 and IPFIX from softflowd stored as nfdump stores them, each flow once, through worker SIGKILLs every 500 ms', { skip, timeout: 240000 }, async (t) => {
  const exports = await exportsAndOracle(t, 3000)
  const { collector, db, port } = await startTestCollector(t, netflow)
  const loop = killLoop(collector, 500)
  await sendAll(t, port, exports, 40)
  const killed = await loop.stop(3)
  const sent = exports.reduce((n, e) => n + e.datagrams.length, 0)
  const s = await waitFor(async () => {
    const stats = await collector.stats()
    return stats.received === sent && stats.inFlight === 0 && accountedFor(stats) ? stats : null
  }, { timeout: 120000, what: 'every datagram processed or dropped' })
  t.diagnostic(JSON.stringify({ datagrams: sent, flows: exports.map((e) => e.oracle.length), killed }))
  assert.ok(killed >= 3, `workers killed: ${killed}`)
  assert.equal(s.dropped.total, 0, JSON.stringify(s.dropped))
  assert.equal(s.processed, sent)
  await checkStored(db, exports)
})

// IPFIX over TCP (RFC 7011 §10.4): messages back to back on one
// connection, each carrying its length. Before, the stream was cut at
// newline bytes (the framework's default framing) and every message was
// dropped as netflow-bad-version (QA).
test('netflow: IPFIX over TCP, messages cut across writes anywhere, stored as nfdump stores them from UDP', { skip, timeout: 120000 }, async (t) => {
  const ipfix = (await exportsAndOracle(t, 1000)).filter((e) => e.version === 10)
  const { collector, db, port } = await startTestCollector(t, netflow, ['--protocol', 'tcp_server'])
  const net = require('node:net')
  const socket = net.connect(port, '127.0.0.1')
  t.after(() => socket.destroy())
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  const stream = Buffer.concat(ipfix[0].datagrams)
  let seed = 7
  for (let at = 0; at < stream.length;) {
    seed = (seed * 1103515245 + 12345) % 2147483648
    const size = 1 + seed % 700
    await new Promise((resolve, reject) => socket.write(stream.subarray(at, at + size), (err) => err ? reject(err) : resolve()))
    at += size
    if (seed % 5 === 0) await sleep(2)
  }
  const sent = ipfix[0].datagrams.length
  const s = await waitFor(async () => {
    const stats = await collector.stats()
    return stats.received === sent && stats.inFlight === 0 && accountedFor(stats) ? stats : null
  }, { timeout: 60000, what: 'every message processed' })
  assert.equal(s.dropped.total, 0, JSON.stringify(s.dropped))
  assert.equal(s.processed, sent)
  await checkStored(db, ipfix)
})

test('netflow: a master SIGKILLed mid-stream with the disk buffer, started again: every flow once, templates kept', { skip, timeout: 240000 }, async (t) => {
  const { runCollector, withDatabase } = require('../fixtures/foreground-run')
  const exports = await exportsAndOracle(t, 1500)
  const { uri } = await getTestMongo()
  const database = uniqueDbName('netflowkill')
  const env = { MONGODB_URI: withDatabase(uri, database), COLLECTOR_BUFFER_DIR: path.join(tempBufferDir(t), 'buffer') }
  const flags = ['-i', '2', '--flush-interval', '200ms', '--buffer']
  const first = await runCollector(t, 'netflow', { flags, env })
  const sent = exports.reduce((n, e) => n + e.datagrams.length, 0)
  const half = exports.map((e) => ({ ...e, datagrams: e.datagrams.slice(0, Math.ceil(e.datagrams.length / 2)) }))
  const rest = exports.map((e, k) => ({ ...e, datagrams: e.datagrams.slice(half[k].datagrams.length) }))
  const sockets = exporterSockets(t, exports.length) // the exporters carry on from the same ports after the collector's restart
  await sendAll(t, first.port, half, 5, sockets)
  const halfCount = half.reduce((n, e) => n + e.datagrams.length, 0)
  await waitFor(async () => { const s = await first.stats(); return s && s.received === halfCount && s.buffer.messages + s.processed >= s.received }, { what: 'every datagram received and on disk or stored', timeout: 30000 })
  process.kill(first.pid, 'SIGKILL') // the master only: its workers flush what they hold, unacknowledged
  await first.exited
  const second = await runCollector(t, 'netflow', { flags, env, port: first.port })
  await sendAll(t, second.port, rest, 5, sockets)
  const s = await waitFor(async () => { const s = await second.stats(); return s && s.received === sent - halfCount && s.inFlight === 0 && s.buffer.messages === 0 ? s : null }, { what: 'the replay and the rest stored and acknowledged', timeout: 90000 })
  t.diagnostic(JSON.stringify({ datagrams: sent, replayed: s.replayed }))
  assert.equal(s.dropped.total, 0, JSON.stringify(s.dropped))
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  await checkStored(client.db(database), exports)
  process.kill(second.pid, 'SIGINT')
  assert.equal((await second.exited).code, 0)
})

test('netflow: a datagram of 999 one-byte records stores 999 flows; one of 1,000 is refused whole as netflow-too-many-records', { timeout: 60000 }, async (t) => {
  const { ipfixMessage, set, templateSet } = require('../helpers/netflow-packets')
  const { collector, db, port } = await startTestCollector(t, netflow, [], { instances: 1 })
  const datagram = (n, sequence) => ipfixMessage({ exportTime: 1795600000, sequence, domain: 7, sets: [templateSet(2, [{ id: 401, fields: [[4, 1]] }]), set(401, Buffer.alloc(n, 17))] })
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  for (const buf of [datagram(999, 0), datagram(1000, 999)]) await new Promise((resolve, reject) => socket.send(buf, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  await waitFor(() => collector.summary().received === 2 && collector.summary().inFlight === 0, { what: 'both datagrams through' })
  const summary = collector.summary()
  assert.equal(summary.processed, 1)
  assert.equal(summary.dropped['netflow-too-many-records'], 1)
  assert.equal(await db.collection('flows').countDocuments(), 999)
})

// A datagram of more templates than a scope holds (keep.maxPerScope, 4,096)
// is refused as keptFull: before, the 4,095 it set first stayed, and later
// data was decoded with templates of a datagram counted dropped.
test('netflow: a datagram of more templates than a scope holds is refused whole, none of its templates kept; the next one is decoded', { timeout: 60000 }, async (t) => {
  const { ipfixMessage, set, templateSet } = require('../helpers/netflow-packets')
  const { collector, db, port } = await startTestCollector(t, netflow, [], { instances: 1 })
  const templates = Array.from({ length: 4100 }, (_, i) => ({ id: 300 + i, fields: [[4, 1]] }))
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const send = (buf) => new Promise((resolve, reject) => socket.send(buf, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  await send(ipfixMessage({ exportTime: 1795600000, sequence: 0, domain: 8, sets: [templateSet(2, templates)] }))
  await waitFor(() => collector.summary().received === 1 && collector.summary().inFlight === 0, { what: 'the datagram of templates through' })
  assert.equal(collector.summary().dropped.keptFull, 1)
  await send(ipfixMessage({ exportTime: 1795600001, sequence: 0, domain: 8, sets: [set(300, Buffer.alloc(3, 17))] }))
  await send(ipfixMessage({ exportTime: 1795600002, sequence: 3, domain: 8, sets: [templateSet(2, [{ id: 300, fields: [[4, 1]] }]), set(300, Buffer.alloc(2, 6))] }))
  await waitFor(() => collector.summary().received === 3 && collector.summary().inFlight === 0, { what: 'data after it through' })
  const summary = collector.summary()
  assert.equal(summary.dropped['netflow-unknown-template'], 1, 'data naming a template of the refused datagram is not decoded with it')
  assert.equal(summary.processed, 1)
  await collector.stop()
  assert.deepEqual((await db.collection('flows').find().toArray()).map((f) => f.proto), [6, 6])
  const kept = (await db.collection('netflow_kept').find().toArray()).map((d) => d.name).sort()
  assert.deepEqual(kept, ['10|8|300', 'clock|10|8', 'next|10|8'], 'only the template (and sequence and export clock) of the accepted datagram')
})

// Two exporters behind one address (two softflowd on a router, or a NAT),
// each with template 1024 of its own layout in domain 0: templates belong to
// the transport session (RFC 7011 §8), and each exporter's data is read with
// its own. Before, the second template replaced the first, and the first
// exporter's data was refused, or read with the other's layout.
test('netflow: two exporters on one address, one template id with two layouts: each datagram read with its own exporter\'s template', { timeout: 60000 }, async (t) => {
  const { ipfixMessage, set, templateSet, uint } = require('../helpers/netflow-packets')
  const { collector, db, port } = await startTestCollector(t, netflow, [], { instances: 2 })
  const exporter = () => exporterSocket(t, port)
  const [a, b] = [await exporter(), await exporter()]
  const templateA = templateSet(2, [{ id: 1024, fields: [[4, 1], [1, 4]] }]) // protocol, then 4-byte octets
  const templateB = templateSet(2, [{ id: 1024, fields: [[1, 8], [4, 1]] }]) // 8-byte octets, then protocol
  const dataA = (bytes) => set(1024, Buffer.concat([uint(6, 1), uint(bytes, 4)]))
  const dataB = (bytes) => set(1024, Buffer.concat([uint(bytes, 8), uint(17, 1)]))
  await a(ipfixMessage({ exportTime: 1795600000, sequence: 0, sets: [templateA] }))
  await b(ipfixMessage({ exportTime: 1795600000, sequence: 0, sets: [templateB] }))
  for (let i = 0; i < 5; i++) {
    await a(ipfixMessage({ exportTime: 1795600001 + i, sequence: i, sets: [dataA(1000 + i)] }))
    await b(ipfixMessage({ exportTime: 1795600001 + i, sequence: i, sets: [dataB(2000 + i)] }))
  }
  await waitFor(() => collector.summary().received === 12 && collector.summary().inFlight === 0, { what: 'every datagram through' })
  const summary = collector.summary()
  assert.equal(summary.processed, 12, JSON.stringify(summary.dropped))
  await collector.stop()
  const flows = (await db.collection('flows').find().toArray()).map((f) => [f.proto, f.bytes]).sort((x, y) => x[1] - y[1])
  assert.deepEqual(flows, [0, 1, 2, 3, 4].map((i) => [6, 1000 + i]).concat([0, 1, 2, 3, 4].map((i) => [17, 2000 + i])))
})

// Versions before transport sessions kept an exporter's templates by its
// address alone. After an upgrade, the datagrams the disk buffer replayed
// (and live data until the exporter repeated its templates) were refused
// as netflow-unknown-template though their templates were in netflow_kept.
test('netflow: after an upgrade, a session with no templates of its own reads those an earlier version kept by the exporter\'s address', { timeout: 60000 }, async (t) => {
  const { ipfixMessage, set, templateSet, uint } = require('../helpers/netflow-packets')
  const { collector, db, port } = await startTestCollector(t, netflow, [], { instances: 1 })
  const exporter = () => exporterSocket(t, port)
  const template = templateSet(2, [{ id: 1024, fields: [[4, 1], [1, 4]] }]) // protocol, then 4-byte octets
  const data = (bytes) => set(1024, Buffer.concat([uint(6, 1), uint(bytes, 4)]))
  const first = await exporter()
  await first(ipfixMessage({ exportTime: 1795600000, sequence: 0, sets: [template] }))
  await waitFor(() => collector.summary().processed === 1, { what: 'the template kept' })
  await waitFor(async () => (await db.collection('netflow_kept').countDocuments()) > 0, { what: 'the template written' })
  // As a version before transport sessions left it: scoped by the address alone.
  const session = await db.collection('netflow_kept').find().toArray()
  await db.collection('netflow_kept').insertMany(session.map(({ _id, scope, seenAt, ...doc }) => ({ ...doc, _id: `127.0.0.1\u0000${doc.name}`, scope: '127.0.0.1' })))
  await db.collection('netflow_kept').deleteMany({ scope: { $ne: '127.0.0.1' } })
  const replayed = await exporter() // another session: nothing of its own kept
  for (let i = 0; i < 3; i++) await replayed(ipfixMessage({ exportTime: 1795600001 + i, sequence: i, sets: [data(1000 + i)] }))
  await waitFor(() => collector.summary().received === 4 && collector.summary().inFlight === 0, { what: 'every datagram through' })
  assert.equal(collector.summary().processed, 4, JSON.stringify(collector.summary().dropped))
  const flows = (await db.collection('flows').find().toArray()).map((f) => [f.proto, f.bytes]).sort((x, y) => x[1] - y[1])
  assert.deepEqual(flows, [[6, 1000], [6, 1001], [6, 1002]])
})

// An operator's trial: sessions that began (templates sent) as a rolling
// restart started had their next datagrams refused as
// netflow-unknown-template by the slot's new worker, which read the
// session's templates before the old worker had written them; sequence
// state read as stale counted flows lost that were stored.
test('netflow: sessions beginning through rolling restarts: a slot\'s new worker takes nothing before the old one stored its templates; no datagram refused, nothing counted lost (QA)', { timeout: 120000 }, async (t) => {
  const { ipfixMessage, set, templateSet, uint } = require('../helpers/netflow-packets')
  const { collector, db, port } = await startTestCollector(t, netflow)
  const send = await exporterSocket(t, port)
  const template = templateSet(2, [{ id: 1024, fields: [[4, 1], [1, 4]] }]) // protocol, then 4-byte octets
  const data = (bytes) => set(1024, Buffer.concat(Array.from({ length: 30 }, (_, i) => Buffer.concat([uint(6, 1), uint(bytes + i, 4)]))))
  const DOMAINS = 120
  const loop = restartLoop(collector, 700)
  // A session a domain: its templates, then four data messages 10 ms apart.
  for (let domain = 1; domain <= DOMAINS; domain++) {
    await send(ipfixMessage({ exportTime: 1795600000, sequence: 0, domain, sets: [template] }))
    for (let i = 0; i < 4; i++) {
      await sleep(10)
      await send(ipfixMessage({ exportTime: 1795600001 + i, sequence: i * 30, domain, sets: [data(1000 * i)] })) // IPFIX counts data records
    }
  }
  const restarts = await loop.stop(3)
  const stats = await waitFor(async () => {
    const s = await collector.stats()
    return s.inFlight === 0 && accountedFor(s) && s.received === DOMAINS * 5 ? s : null
  }, { timeout: 60000, what: 'every datagram through' })
  assert.equal(stats.dropped.total, 0, JSON.stringify(stats.dropped))
  assert.equal(await db.collection('flows').countDocuments(), DOMAINS * 120, 'every flow once')
  const exporters = await db.collection('exporters').find().toArray()
  assert.equal(exporters.reduce((n, e) => n + (e.lost || 0), 0), 0, `nothing counted lost: ${JSON.stringify(exporters.filter((e) => e.lost))}`)
  t.diagnostic(`${restarts} rolling restarts`)
})

// An exporter whose templates each ride with data of the other (IPv4 and
// IPv6 monitors, data and options templates, on timers of their own): a
// datagram refused for data of a template not known yet keeps the templates
// it brought, or none would ever be kept and every datagram be refused.
test('netflow: templates that each come beside data of the other are kept from a datagram refused as netflow-unknown-template', { timeout: 60000 }, async (t) => {
  const { ipfixMessage, set, templateSet, uint } = require('../helpers/netflow-packets')
  const { collector, db, port } = await startTestCollector(t, netflow, [], { instances: 1 })
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const send = (buf) => new Promise((resolve, reject) => socket.send(buf, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  const template = (id) => templateSet(2, [{ id, fields: [[4, 1], [1, 4]] }])
  const data = (id, bytes) => set(id, Buffer.concat([uint(6, 1), uint(bytes, 4)]))
  let sequence = 0
  for (let round = 0; round < 3; round++) {
    await send(ipfixMessage({ exportTime: 1795600000 + round, sequence: sequence++, sets: [template(300), data(300, 100 + round), data(301, 200 + round)] }))
    await send(ipfixMessage({ exportTime: 1795600000 + round, sequence: sequence++, sets: [template(301), data(301, 300 + round), data(300, 400 + round)] }))
  }
  await waitFor(() => collector.summary().received === 6 && collector.summary().inFlight === 0, { what: 'every datagram through' })
  const summary = collector.summary()
  assert.deepEqual([summary.processed, summary.dropped['netflow-unknown-template']], [5, 1], 'only the first, before template 301 was ever sent')
  await collector.stop()
  assert.equal(await db.collection('flows').countDocuments(), 10)
})

// Options records (interface names, sampling) were decoded and then neither
// stored nor counted, though their datagram counted processed.
test('netflow: options records are stored per exporter, template and scope, the last one sent winning; an enterprise element\'s name keeps no dot', { timeout: 60000 }, async (t) => {
  const { v9Packet, ipfixMessage, set, templateSet, uint } = require('../helpers/netflow-packets')
  const { collector, db, port } = await startTestCollector(t, netflow, [], { instances: 1 })
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const send = (buf) => new Promise((resolve, reject) => socket.send(buf, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  // v9 options template 300: scope interface (4 bytes), samplingInterval (34), samplingAlgorithm (35).
  const v9 = (sequence, interval) => v9Packet({
    sequence, sourceId: 1, count: 2, secs: 1795600000 + sequence, sysUptime: 1000 * sequence,
    sets: [templateSet(1, [{ id: 300, scope: 1, fields: [[2, 4], [34, 4], [35, 1]] }]), set(300, Buffer.concat([uint(3, 4), uint(interval, 4), uint(2, 1), uint(7, 4), uint(interval * 2, 4), uint(1, 1)]), { padding: 2 })]
  })
  // IPFIX options template 400: scope ingressInterface (10), interfaceName (82, variable), an enterprise element 9.100 of 2 bytes.
  const name = (text) => Buffer.concat([uint(text.length, 1), Buffer.from(text)])
  const ipfix = ipfixMessage({ exportTime: 1795600000, sequence: 0, domain: 9, sets: [templateSet(3, [{ id: 400, scope: 1, fields: [[10, 4], [82, 65535], [100, 2, 9]] }]), set(400, Buffer.concat([uint(5, 4), name('uplink'), uint(0xbeef, 2)]))] })
  for (const buf of [v9(0, 100), v9(1, 64), ipfix]) await send(buf)
  await waitFor(() => collector.summary().received === 3 && collector.summary().inFlight === 0, { what: 'every datagram through' })
  assert.equal(collector.summary().processed, 3, JSON.stringify(collector.summary().dropped))
  const docs = await db.collection('flow_options').find().sort({ _id: 1 }).toArray()
  assert.deepEqual(docs.map((d) => [d.version, d.domain, d.templateId, d.scope, d.values.value]), [
    [10, 9, 400, { ingressInterface: 5 }, { interfaceName: 'uplink', '9%2E100': 'beef' }],
    [9, 1, 300, { scopeInterface: 3 }, { samplingInterval: 64, samplingAlgorithm: 2 }],
    [9, 1, 300, { scopeInterface: 7 }, { samplingInterval: 128, samplingAlgorithm: 1 }]
  ])
  assert.ok(docs.every((d) => d.lastSeen instanceof Date && d.exporter === '127.0.0.1'))
})
