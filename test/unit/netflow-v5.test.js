'use strict'
// NetFlow v5 as Cisco lays it out: a 24-byte header, 1–30 records of 48
// bytes, times relative to the exporter's sysUptime.
const test = require('node:test')
const assert = require('node:assert/strict')
const { decodeNetflow, sequenceGap } = require('../../collectors/netflow/netflow-decoder')
const DecodeError = require('../../exceptions/decode-error')
const { v5Packet } = require('../helpers/netflow-packets')

const EXPORT_SECS = 1795600000
const record = {
  srcAddr: '10.1.2.3', dstAddr: '192.0.2.77', nextHop: '10.1.2.254', inputIf: 3, outputIf: 7, packets: 12, bytes: 4096,
  first: 90000, last: 99000, srcPort: 51515, dstPort: 443, tcpFlags: 0x1b, proto: 6, tos: 0xb8, srcAs: 64500, dstAs: 65001
}

test('a v5 record decodes into every field of the flow record', () => {
  const got = decodeNetflow(v5Packet({ sysUptime: 100000, secs: EXPORT_SECS, nsecs: 250_000_000, sequence: 41, engineType: 1, engineId: 2, sampling: 0x4064, records: [record] }))
  assert.equal(got.version, 5)
  assert.equal(got.domain, 0x0102, 'engine type and ID')
  assert.equal(got.sequence, 41)
  assert.equal(got.nextSequence, 42, 'v5 sequences count flows')
  assert.equal(got.exportTime, EXPORT_SECS * 1000 + 250)
  assert.equal(got.samplingInterval, 100, 'the low 14 bits')
  assert.deepEqual(got.records, [{
    srcAddr: '10.1.2.3', dstAddr: '192.0.2.77', srcPort: 51515, dstPort: 443, proto: 6, packets: 12, bytes: 4096,
    first: EXPORT_SECS * 1000 + 250 - 10000, last: EXPORT_SECS * 1000 + 250 - 1000,
    tcpFlags: 0x1b, tos: 0xb8, inputIf: 3, outputIf: 7, srcAs: 64500, dstAs: 65001, nextHop: '10.1.2.254',
    reverseBytes: 0, reversePackets: 0, reverseTcpFlags: 0, samplingInterval: 100
  }], 'the header\'s sampling interval on each record: counts are not scaled, so an operator can')
  assert.deepEqual([got.templatesLearned, got.templatesWithdrawn, got.unknownTemplates, got.unknownFields, got.options], [0, 0, 0, 0, []])
})

test('v5 times stay right across the 32-bit uptime wrap and before an uptime of zero', () => {
  const exportMs = EXPORT_SECS * 1000
  const wrapped = decodeNetflow(v5Packet({ sysUptime: 1000, secs: EXPORT_SECS, records: [{ first: 2 ** 32 - 500, last: 800 }] }))
  assert.equal(wrapped.records[0].first, exportMs - 1500, 'started 500 ms before the wrap')
  assert.equal(wrapped.records[0].last, exportMs - 200)
  // softflowd reading a pcap starts its uptime at 0 after the flows it exports
  const early = decodeNetflow(v5Packet({ sysUptime: 0, secs: EXPORT_SECS, records: [{ first: 2 ** 32 - 60000, last: 2 ** 32 - 1 }] }))
  assert.equal(early.records[0].first, exportMs - 60000)
  assert.equal(early.records[0].last, exportMs - 1)
})

test('v5 carries 30 records at most and exactly what its count says', () => {
  const records = Array.from({ length: 30 }, (_, i) => ({ ...record, srcPort: i }))
  const full = decodeNetflow(v5Packet({ records }))
  assert.equal(full.records.length, 30)
  assert.deepEqual(full.records.map((r) => r.srcPort), records.map((r) => r.srcPort))
  const reasonOf = (buf) => { const got = decodeNetflow(buf); assert.ok(got instanceof DecodeError, 'refused'); return got.reason }
  assert.equal(reasonOf(v5Packet({ records: [...records, record] })), 'netflow-bad-count')
  assert.equal(reasonOf(v5Packet({ count: 0, records: [] })), 'netflow-bad-count')
  assert.equal(reasonOf(v5Packet({ count: 3, records: [record, record] })), 'netflow-truncated')
  assert.equal(reasonOf(v5Packet({ count: 1, records: [record, record] })), 'netflow-bad-length')
  assert.equal(reasonOf(v5Packet({ records: [record] }).subarray(0, 20)), 'netflow-truncated')
  assert.equal(reasonOf(Buffer.from([0])), 'netflow-truncated')
  assert.equal(reasonOf(Buffer.from([0, 7, 0, 1])), 'netflow-bad-version')
})

test('sequence gaps read modulo 2^32: lost datagrams ahead, late or restarted ones behind', () => {
  assert.equal(sequenceGap(100, 100), 0)
  assert.equal(sequenceGap(100, 130), 30)
  assert.equal(sequenceGap(2 ** 32 - 10, 20), 30, 'across the wrap')
  assert.equal(sequenceGap(130, 100), -30)
})

test('the decoder takes Buffers only, and a v9 or IPFIX datagram needs a template store', () => {
  assert.throws(() => decodeNetflow('0005'), TypeError)
  assert.throws(() => decodeNetflow(Buffer.from([0, 9, 0, 0])), /template store/)
  assert.throws(() => decodeNetflow(Buffer.from([0, 10, 0, 0]), { templates: { get () {} } }), /template store/)
})
