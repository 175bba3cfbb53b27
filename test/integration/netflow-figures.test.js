'use strict'
// What the NetFlow collector's figures say beyond each flow (QA): an IPFIX
// biflow's reverse direction (softflowd -b, RFC 5103) stored and counted as
// nfdump shows it (in and out bytes); the fields read past visible in the
// workers' figures; the sampling interval a datagram says stored on its
// flows; a reordered datagram counted late once, not lost twice; per-minute
// totals aged by when they were written, not by the exporter's clock.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const dgram = require('node:dgram')
const netflow = require('../../collectors/netflow')
const { decodeNetflow, createMemoryTemplateStore } = require('../../collectors/netflow/netflow-decoder')
const { makeFlows, writeFlowPcap } = require('../helpers/netflow-pcap')
const { missingPeers, softflowdExport, nfdumpOf, key } = require('../helpers/netflow-peers')
const { v5Packet, v9Packet, ipfixMessage, set, templateSet, uint } = require('../helpers/netflow-packets')
const { startTestCollector } = require('../helpers/collector')
const { waitFor } = require('../helpers/wait-for')
const { storageOf } = require('../../lib/shared/worker-stats')
const { removeDir } = require('../helpers/temp-dir')

const missing = missingPeers()
if (missing.length && process.env.CI) throw new Error(`the NetFlow figures test needs ${missing.join(', ')} (Debian softflowd, nfdump)`)
const skip = missing.length ? `needs ${missing.join(', ')} (Debian softflowd, nfdump)` : false

async function sendInOrder (t, port, datagrams) {
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  for (const buf of datagrams) await new Promise((resolve, reject) => socket.send(buf, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
}

const processed = (collector, n) => waitFor(() => collector.summary().received === n && collector.summary().inFlight === 0, { what: `${n} datagrams through`, timeout: 60000 })

// Each flow and its reply (the endpoints swapped, a packet 1 ms after each of the flow's).
function withReplies (flows) {
  const replies = flows.filter((f, i) => i % 4 !== 0).map((f) => {
    const packets = f.packets.map((p) => ({ ...p, time: p.time + 1, payload: Math.max(10, p.payload >> 1) }))
    const header = f.bytes - f.packets.reduce((sum, p) => sum + p.payload, 0)
    return { ...f, srcAddr: f.dstAddr, dstAddr: f.srcAddr, srcPort: f.dstPort, dstPort: f.srcPort, packets, bytes: header + packets.reduce((sum, p) => sum + p.payload, 0), first: packets[0].time, last: packets.at(-1).time }
  })
  return [...flows, ...replies]
}

const add = (map, name, values) => {
  const sum = map.get(name) || { bytes: 0, packets: 0, flows: 0 }
  map.set(name, { bytes: sum.bytes + values.bytes, packets: sum.packets + values.packets, flows: sum.flows + values.flows })
}

test('netflow: an IPFIX biflow (softflowd -b) keeps its reverse direction: flows and per-minute totals as nfdump\'s in and out bytes; the fields read past are in the workers\' figures', { skip, timeout: 180000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netflow-biflow-'))
  t.after(() => removeDir(dir))
  const traffic = withReplies(makeFlows({ count: 300, start: Date.now() - 10 * 60000, spanMs: 120000 }))
  const pcap = path.join(dir, 'flows.pcap')
  await writeFlowPcap(pcap, traffic)
  const { datagrams } = await softflowdExport(pcap, ['-v', '10', '-b', '-A', 'milli'])
  const nfdump = await nfdumpOf(datagrams, fs.mkdtempSync(path.join(dir, 'nfcapd-')))
  const { collector, db, port } = await startTestCollector(t, netflow)
  await sendInOrder(t, port, datagrams)
  await processed(collector, datagrams.length)
  assert.equal(collector.summary().processed, datagrams.length)

  const stored = await db.collection('flows').find().toArray()
  const counts = (f) => [f.bytes, f.packets, f.reverseBytes, f.reversePackets]
  const ours = new Map(stored.map((f) => [key(f), counts(f)]))
  const theirs = new Map(nfdump.flows.map((f) => [key({ proto: f.proto, srcAddr: f.src4_addr ?? f.src6_addr, srcPort: f.src_port, dstAddr: f.dst4_addr ?? f.dst6_addr, dstPort: f.dst_port }),
    [f.in_bytes, f.in_packets, f.out_bytes ?? 0, f.out_packets ?? 0]]))
  assert.equal(stored.length, nfdump.flows.length)
  assert.deepEqual(Object.fromEntries([...ours].sort()), Object.fromEntries([...theirs].sort()), 'per flow: nfdump\'s in and out bytes and packets')
  const written = traffic.reduce((sum, f) => sum + f.bytes, 0)
  assert.equal(stored.reduce((sum, f) => sum + f.bytes + f.reverseBytes, 0), written, 'every byte of the pcap, both ways')
  assert.ok(stored.filter((f) => f.reverseBytes > 0).length >= 200, 'most flows have a reply')

  // Per source and destination: the forward pair the in side, the swapped pair the out side.
  const want = new Map()
  for (const f of nfdump.flows) {
    add(want, `${f.src4_addr ?? f.src6_addr}|${f.dst4_addr ?? f.dst6_addr}`, { bytes: f.in_bytes, packets: f.in_packets, flows: 1 })
    if (f.out_packets > 0) add(want, `${f.dst4_addr ?? f.dst6_addr}|${f.src4_addr ?? f.src6_addr}`, { bytes: f.out_bytes, packets: f.out_packets, flows: 1 })
  }
  const got = new Map()
  for (const m of await db.collection('flow_minutes').find().toArray()) add(got, `${m.srcAddr}|${m.dstAddr}`, m)
  assert.deepEqual(Object.fromEntries([...got].sort()), Object.fromEntries([...want].sort()), 'flow_minutes per direction')
  const perInterface = await db.collection('interface_minutes').find().toArray()
  assert.equal(perInterface.reduce((sum, m) => sum + m.bytes, 0), written, 'interface_minutes: both ways')

  // Read past: what the codec counts, per element, in the workers' figures.
  const templates = createMemoryTemplateStore()
  const readPast = datagrams.reduce((sum, buf) => sum + decodeNetflow(buf, { templates }).unknownFields, 0)
  const { workers } = await collector.stats()
  const tallied = {}
  for (const w of workers) for (const [name, n] of Object.entries(w.custom.unknownFields || {})) tallied[name] = (tallied[name] || 0) + n
  assert.equal(Object.values(tallied).reduce((a, b) => a + b, 0), readPast)
  assert.ok(readPast > 0 && tallied['29305.5'] > 0, `the reverse class of service, which no document holds, is counted: ${JSON.stringify(tallied)}`)
})

const v5Datagram = (sequence, sampling = 0) => v5Packet({
  secs: Math.floor(Date.now() / 1000), sequence, sampling, records: Array.from({ length: 10 }, (_, i) => ({ srcPort: 1000 + i, bytes: 100, packets: 1 }))
})

test('netflow: a v5 datagram\'s sampling interval is on each of its flows (counts are not scaled: an operator can)', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, netflow, [], { instances: 1 })
  await sendInOrder(t, port, [v5Datagram(0, 0x4000 | 10), v5Datagram(10)]) // softflowd -s 10: mode 1, interval 10; then none
  await processed(collector, 2)
  const flows = await db.collection('flows').find().toArray()
  assert.deepEqual(flows.map((f) => [f.samplingInterval, f.bytes]).sort(), [...Array(10).fill([0, 100]), ...Array(10).fill([10, 100])])
})

test('netflow: two datagrams swapped count one late and no loss; a step far back is the exporter\'s restart', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, netflow, [], { instances: 1 })
  // An exporter long up: 3,000,000, then 3,000,020 before 3,000,010; then it restarts from 0.
  await sendInOrder(t, port, [3000000, 3000020, 3000010, 3000030, 0, 10].map((sequence) => v5Datagram(sequence)))
  await processed(collector, 6)
  const [exporter] = await db.collection('exporters').find().toArray()
  assert.deepEqual([exporter.datagrams, exporter.flows, exporter.lost, exporter.late, exporter.restarts], [6, 60, 0, 1, 1], JSON.stringify(exporter))
  assert.equal(await db.collection('flows').countDocuments(), 60)
})

// Each exporter on a port of its own (its own transport session): what its
// domain's sequence says, read back from `exporters`.
async function exporterFigures (t, datagrams, refused = 0) {
  const { collector, db, port } = await startTestCollector(t, netflow, [], { instances: 1 })
  await sendInOrder(t, port, datagrams)
  await processed(collector, datagrams.length)
  assert.equal(collector.summary().processed, datagrams.length - refused, 'every datagram accepted but those refused')
  const [exporter] = await db.collection('exporters').find().toArray()
  return [exporter.datagrams, exporter.lost, exporter.late, exporter.restarts]
}

test('netflow: an exporter\'s restart is not loss: an IPFIX counter long past 2^31 started again from 0 (a jump past 2^32), and a v9 exporter restarted within its late window (its uptime says so)', { timeout: 90000 }, async (t) => {
  const at = Math.floor(Date.now() / 1000)
  const ipfix = (sequence, i) => ipfixMessage({ exportTime: at + i, sequence, domain: 3, sets: [templateSet(2, [{ id: 300, fields: [[1, 4]] }]), set(300, Buffer.concat([uint(100, 4), uint(200, 4)]))] })
  // 3e9, 3e9 + 2; restart: 0, 2; then 6 (4, two records, lost on the way).
  assert.deepEqual(await exporterFigures(t, [3e9, 3e9 + 2, 0, 2, 6].map(ipfix)), [5, 2, 0, 1],
    'lost: the 2 records of the real gap, not 2^32 - 3e9 + 0 (1,294,967,294 before)')

  // v9 packets 0–49, an uptime of a day; restart (uptime 5 s) at packet 0, then 1, 2, 4 (packet 3 lost).
  const v9 = (sequence, sysUptime, secs) => v9Packet({ sequence, sysUptime, secs, sourceId: 4, count: 1, sets: [templateSet(0, [{ id: 260, fields: [[2, 4]] }])] })
  const day = 86400000
  const before = Array.from({ length: 50 }, (_, i) => v9(i, day + i * 1000, at + i))
  const after = [0, 1, 2, 4].map((sequence, i) => v9(sequence, 5000 + i * 1000, at + 60 + i))
  assert.deepEqual(await exporterFigures(t, [...before, ...after]), [54, 1, 0, 1],
    'a restart, and the loss after it counted (before: 4 late, 0 restarts, the 3rd packet lost unseen)')
})

// Review of the restart rules: an exporter whose clock is unset (0) or
// frozen read as restarting at every datagram more than 30 s apart, which
// hid its loss; one datagram from before a restart, coming after it, read
// as a second restart and made the in-order ones after it late.
test('netflow: a v5 exporter without a clock still counts its loss; a datagram from before a restart, arriving after it, is late, not a second restart', { timeout: 90000 }, async (t) => {
  const v5 = (sequence, sysUptime, secs) => v5Packet({ secs, sysUptime, sequence, records: [{ bytes: 100, packets: 1 }] })
  // Unix secs 0, a datagram a minute; flows 5-7 lost.
  assert.deepEqual(await exporterFigures(t, [0, 1, 2, 3, 4, 8, 9, 10].map((sequence, i) => v5(sequence, 100000 + i * 60000, 0))), [8, 3, 0, 0])
  const at = Math.floor(Date.now() / 1000)
  const before = [1000, 1001, 1002].map((sequence, i) => v5(sequence, 86400000 + i * 1000, at + i))
  const after = [1, 2, 3, 5].map((sequence, i) => v5(sequence, 6000 + i * 1000, at + 11 + i)) // flow 4 lost
  assert.deepEqual(await exporterFigures(t, [...before, v5(0, 5000, at + 10), v5(1003, 86403000, at + 3), ...after]), [9, 1, 1, 1])
})

test('netflow: a datagram refused for want of its template is not counted lost by the exporter at the next one', { timeout: 90000 }, async (t) => {
  const at = Math.floor(Date.now() / 1000)
  const known = templateSet(0, [{ id: 270, fields: [[1, 4]] }])
  const v9 = (sequence, sets) => v9Packet({ sequence, sysUptime: 1000 * sequence, secs: at + sequence, sourceId: 5, count: 1, sets })
  // 0: a template and its data; 1: data of template 271, never sent; 2: data of 270; 4: data of 270 (3 lost).
  const datagrams = [v9(0, [known, set(270, uint(10, 4))]), v9(1, [set(271, uint(11, 4))]), v9(2, [set(270, uint(12, 4))]), v9(4, [set(270, uint(13, 4))])]
  assert.deepEqual(await exporterFigures(t, datagrams, 1), [3, 1, 0, 0], 'lost: packet 3 only (before: 2, the refused packet 1 too)')
})

test('netflow: per-minute totals age by their last write, not the exporter\'s clock: a minute a day old written now survives --retention 1h; one not written for longer goes', { timeout: 90000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, netflow, ['--retention', '1h', '--storage-interval', '1s'], { instances: 1 })
  const dayAgo = Math.floor(Date.now() / 1000) - 86400 // a router without NTP, a day behind
  await sendInOrder(t, port, [v5Packet({ secs: dayAgo, sysUptime: 60000, records: [{ first: 50000, last: 59000, bytes: 1500, packets: 3 }] })])
  await processed(collector, 1)
  assert.equal(collector.summary().processed, 1)
  const stale = new Date(Date.now() - 2 * 3600000)
  for (const name of ['flow_minutes', 'interface_minutes']) await db.collection(name).insertOne({ _id: `stale-${name}`, minute: stale, lastSeen: stale, bytes: 1, packets: 1, flows: 1 })
  await waitFor(async () => {
    const s = storageOf(await collector.stats())
    return s && s.collections.flow_minutes?.deleted.retention >= 1 && s.collections.interface_minutes?.deleted.retention >= 1
  }, { what: 'a retention sweep of both minute collections', timeout: 30000, interval: 200 })
  for (const name of ['flow_minutes', 'interface_minutes']) {
    const docs = await db.collection(name).find().toArray()
    assert.deepEqual(docs.map((d) => [d.bytes, Math.round((Date.now() - d.minute.getTime()) / 3600000)]), [[1500, 24]], `${name}: the day-old minute written now stays, the stale one went`)
  }
  assert.equal(await db.collection('flows').countDocuments(), 1)
})
