'use strict'
// The NetFlow codec against real peers: softflowd (Debian) exports the flows
// of a pcap we write (400 TCP and UDP flows, IPv4 and IPv6, over two
// minutes) as NetFlow v5, v9 and IPFIX to a socket of this test, which
// decodes the exact datagrams; nfcapd receives the same datagrams and
// nfdump reads back what it stored. Every flow must equal nfdump's
// (addresses, ports, protocol, packets, bytes, TCP flags, ToS, interfaces,
// start and end), and the traffic we wrote (addresses, ports, protocol,
// packets, bytes, flags, and the times where the export keeps them).
//
// Where nfdump 1.7.1 (Debian 12) reads times differently, the comparison
// says so, per run:
// - v5: nfdump unwraps a time before the exporter's uptime began (32-bit
//   wrap), as we do. softflowd without -a starts its uptime after the pcap's
//   flows, so that run exercises the wrap.
// - v9: nfdump does not unwrap (netflow_v9.c adds the raw uptime to the
//   boot time): a flow that ended before boot is 2^32 ms (49.7 days) late in
//   nfdump, unless only its start is before boot (First > Last).
// - IPFIX sysUpTime: nfdump before 1.7.2 swaps flowStartSysUpTime and
//   flowEndSysUpTime (its issue 408, fixed in 1.7.2, commit 4a4dac0b).
// - IPFIX seconds, micro- and nanoseconds: nfdump 1.7.1 reads none of
//   elements 150/151/154–157 (times 0); times are checked against the pcap.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { decodeNetflow, createMemoryTemplateStore, sequenceGap } = require('../../collectors/netflow/netflow-decoder')
const DecodeError = require('../../exceptions/decode-error')
const { makeFlows, writeFlowPcap } = require('../helpers/netflow-pcap')
const { missingPeers, nfdumpVersion, softflowdExport, nfdumpOf, fromNfdump, traffic, key, byKey } = require('../helpers/netflow-peers')
const { removeDir } = require('../helpers/temp-dir')

const TWO_32 = 2 ** 32
const FLOWS = 400
const missing = missingPeers()
if (missing.length && process.env.CI) throw new Error(`the NetFlow oracle needs ${missing.join(', ')} (Debian softflowd, nfdump)`)
const skip = missing.length ? `needs ${missing.join(', ')} (Debian softflowd, nfdump)` : false
const [major, minor, patch] = skip ? [0, 0, 0] : nfdumpVersion()
const nfdumpSwapsUptimes = major * 10000 + minor * 100 + patch < 10702

// times: how nfdump's first/last follow from ours ('same', 'v9-unwrapped', 'swapped', 'unread');
// truth: how ours follow from the pcap ('exact', 'seconds' (floored), 'header-seconds' (v9's export time
// has no fraction: up to 1 s early), 'offset' (softflowd's own clock: durations only)).
const RUNS = [
  { name: 'NetFlow v5', args: ['-v', '5', '-a'], ipv6: false, times: 'same', truth: 'exact' },
  { name: 'NetFlow v5, times before the exporter\'s uptime (32-bit wrap)', args: ['-v', '5'], ipv6: false, times: 'same', truth: 'offset' },
  { name: 'NetFlow v9', args: ['-v', '9', '-a'], ipv6: true, times: 'v9-unwrapped', truth: 'header-seconds' },
  { name: 'NetFlow v9, times before the exporter\'s uptime', args: ['-v', '9'], ipv6: true, times: 'v9-unwrapped', truth: 'offset' },
  { name: 'IPFIX, flowStart/EndSysUpTime and systemInitTimeMilliseconds', args: ['-v', '10', '-a'], ipv6: true, times: nfdumpSwapsUptimes ? 'swapped' : 'same', truth: 'exact' },
  { name: 'IPFIX, flowStart/EndMilliseconds', args: ['-v', '10', '-A', 'milli'], ipv6: true, times: 'same', truth: 'exact' },
  { name: 'IPFIX, flowStart/EndSeconds', args: ['-v', '10', '-A', 'sec'], ipv6: true, times: 'unread', truth: 'seconds' },
  { name: 'IPFIX, flowStart/EndMicroseconds (NTP)', args: ['-v', '10', '-A', 'micro'], ipv6: true, times: 'unread', truth: 'exact' },
  { name: 'IPFIX, flowStart/EndNanoseconds (NTP)', args: ['-v', '10', '-A', 'nano'], ipv6: true, times: 'unread', truth: 'exact' }
]

/** Our records, each with what the test needs of its datagram (the v9 boot time). */
function decodeAll (datagrams) {
  const templates = createMemoryTemplateStore()
  const records = []
  let gaps = 0
  let expected
  for (const buf of datagrams) {
    const got = decodeNetflow(buf, { templates, exporter: '127.0.0.1', now: Date.now() })
    assert.ok(!(got instanceof DecodeError), `refused: ${got.reason}`)
    assert.equal(got.unknownTemplates, 0, 'softflowd sends each template before its data')
    if (expected !== undefined && sequenceGap(expected, got.sequence) !== 0) gaps++
    expected = got.nextSequence
    const boot = got.version === 9 ? got.exportTime - buf.readUInt32BE(4) : undefined
    for (const record of got.records) records.push({ record, boot })
  }
  return { records, gaps }
}

/** Ours, as nfdump 1.7.1 would show the same datagrams (see the head of this file). */
function asNfdumpShows ({ record, boot }, times) {
  const { srcAddr, dstAddr, srcPort, dstPort, proto, packets, bytes, tcpFlags, tos, inputIf, outputIf } = record
  let { first, last } = record
  if (times === 'v9-unwrapped' && last < boot) { first += TWO_32; last += TWO_32 }
  if (times === 'swapped') [first, last] = [last, first]
  if (times === 'unread') first = last = 0
  return { srcAddr, dstAddr, srcPort, dstPort, proto, packets, bytes, first, last, tcpFlags, tos, inputIf, outputIf }
}

/**
 * The traffic we wrote, in record terms (times as the run's export keeps
 * them, checked apart). IPv6 traffic class reads 0: softflowd 1.1.0 masks
 * it with a byte-swapped mask (softflowd.c, `ntohl (0x0ff00000)`), which
 * leaves nothing on a little-endian host.
 */
function truthOf (flows, ipv6) {
  return flows.filter((f) => ipv6 || f.family === 4).map((f) => ({
    srcAddr: f.srcAddr, dstAddr: f.dstAddr, srcPort: f.srcPort, dstPort: f.dstPort, proto: f.proto, tos: f.family === 4 ? f.tos : 0, packets: f.packets.length, bytes: f.bytes,
    tcpFlags: f.packets.reduce((bits, p) => bits | p.flags, 0), first: f.first, last: f.last
  }))
}

function checkTimes (ours, truth, how) {
  for (let i = 0; i < ours.length; i++) {
    const [o, t] = [ours[i], truth[i]]
    const label = `${key(t)}: ours ${o.first}–${o.last}, pcap ${t.first}–${t.last}`
    if (how === 'exact') assert.ok(o.first === t.first && o.last === t.last, label)
    if (how === 'seconds') assert.ok(o.first === Math.floor(t.first / 1000) * 1000 && o.last === Math.floor(t.last / 1000) * 1000, label)
    if (how === 'header-seconds') assert.ok(t.first - o.first >= -1 && t.first - o.first < 1001 && Math.abs((o.last - o.first) - (t.last - t.first)) <= 1, label)
    if (how === 'offset') assert.ok(Math.abs((o.last - o.first) - (t.last - t.first)) <= 1, label)
  }
}

test('softflowd\'s NetFlow v5, v9 and IPFIX export decodes to nfdump\'s flows and to the traffic', { skip, timeout: 180000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netflow-oracle-'))
  t.after(() => removeDir(dir))
  const flows = makeFlows({ count: FLOWS, start: Date.now() - 10 * 60000, spanMs: 120000 })
  const pcap = path.join(dir, 'flows.pcap')
  await writeFlowPcap(pcap, flows)
  const summary = []
  for (const [i, runDef] of RUNS.entries()) {
    await t.test(runDef.name, async () => {
      const exported = await softflowdExport(pcap, runDef.args)
      assert.equal(exported.datagrams.length, exported.packets, 'every datagram softflowd sent arrived')
      const { records, gaps } = decodeAll(exported.datagrams)
      const truth = byKey(truthOf(flows, runDef.ipv6))
      assert.equal(records.length, truth.length, 'one record per flow written')
      const ours = byKey(records.map((r) => r.record))
      assert.deepEqual(ours.map(traffic), truth.map(traffic), 'the traffic written')
      checkTimes(ours, truth, runDef.truth)
      const capd = fs.mkdtempSync(path.join(dir, `nfcapd-${i}-`))
      const nfdump = await nfdumpOf(exported.datagrams, capd)
      assert.equal(nfdump.stats.badPackets, 0)
      // softflowd's IPFIX sequence counts the flows of the message it heads too (RFC 7011: those before
      // it), so most IPFIX messages look like loss, to nfcapd as to us: the same count is the check
      assert.equal(gaps, nfdump.stats.sequenceErrors, 'datagrams off sequence, as nfcapd counts them')
      assert.equal(nfdump.flows.length, records.length, 'nfdump stored as many flows')
      assert.deepEqual(byKey(records.map((r) => asNfdumpShows(r, runDef.times))), byKey(nfdump.flows.map(fromNfdump)), 'nfdump\'s flows')
      summary.push({ run: runDef.name, datagrams: exported.datagrams.length, flows: records.length, sequenceGaps: gaps, nfcapdSequenceErrors: nfdump.stats.sequenceErrors })
    })
  }
  t.diagnostic(JSON.stringify({ nfdump: `${major}.${minor}.${patch}`, runs: summary }))
})
