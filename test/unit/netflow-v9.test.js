'use strict'
// NetFlow v9 (RFC 3954): templates per source ID, options templates with
// their own scope types, padding, and data that arrives before its template.
const test = require('node:test')
const assert = require('node:assert/strict')
const { decodeNetflow, createMemoryTemplateStore } = require('../../collectors/netflow/netflow-decoder')
const DecodeError = require('../../exceptions/decode-error')
const { uint, ipv4, ipv6, v9Packet, set, templateSet } = require('../helpers/netflow-packets')

const SECS = 1795600000
const UPTIME = 500000
// IN_BYTES, IN_PKTS, PROTOCOL, SRC_TOS, TCP_FLAGS, L4_SRC_PORT, IPV4_SRC_ADDR, INPUT_SNMP, L4_DST_PORT,
// IPV4_DST_ADDR, OUTPUT_SNMP, IPV4_NEXT_HOP, SRC_AS, DST_AS, LAST_SWITCHED, FIRST_SWITCHED
const FIELDS = [[1, 4], [2, 4], [4, 1], [5, 1], [6, 1], [7, 2], [8, 4], [10, 2], [11, 2], [12, 4], [14, 2], [15, 4], [16, 4], [17, 4], [21, 4], [22, 4]]
const template = { id: 256, fields: FIELDS }

function dataRecord ({ bytes = 1500, packets = 3, proto = 6, tos = 0, flags = 0x12, srcPort = 40000, src = '10.0.0.1', inIf = 1, dstPort = 80, dst = '10.0.0.2', outIf = 2, hop = '10.0.0.254', srcAs = 1, dstAs = 2, last = UPTIME - 1000, first = UPTIME - 5000 } = {}) {
  return Buffer.concat([uint(bytes, 4), uint(packets, 4), uint(proto, 1), uint(tos, 1), uint(flags, 1), uint(srcPort, 2), ipv4(src), uint(inIf, 2), uint(dstPort, 2), ipv4(dst), uint(outIf, 2), ipv4(hop), uint(srcAs, 4), uint(dstAs, 4), uint(last, 4), uint(first, 4)])
}

const packet = (sets, { sourceId = 7, sequence = 1 } = {}) => v9Packet({ sysUptime: UPTIME, secs: SECS, sequence, sourceId, sets })
const reasonOf = (got) => { assert.ok(got instanceof DecodeError, `refused, got ${JSON.stringify(got)}`); return got.reason }

test('a template then its data in one packet: every field, times from the header uptime', () => {
  const store = createMemoryTemplateStore()
  const got = decodeNetflow(packet([templateSet(0, [template]), set(256, dataRecord())], { sequence: 9 }), { templates: store })
  assert.equal(got.version, 9)
  assert.equal(got.domain, 7)
  assert.equal(got.nextSequence, 10, 'v9 sequences count export packets')
  assert.equal(got.templatesLearned, 1)
  assert.deepEqual(got.records, [{
    srcAddr: '10.0.0.1', dstAddr: '10.0.0.2', srcPort: 40000, dstPort: 80, proto: 6, packets: 3, bytes: 1500,
    first: SECS * 1000 - 5000, last: SECS * 1000 - 1000, tcpFlags: 0x12, tos: 0, inputIf: 1, outputIf: 2, srcAs: 1, dstAs: 2, nextHop: '10.0.0.254',
    reverseBytes: 0, reversePackets: 0, reverseTcpFlags: 0, samplingInterval: 0
  }])
  assert.deepEqual(JSON.parse(JSON.stringify(store.get('9|7|256'))), { fields: FIELDS.map(([e, l]) => [e, l, 0]), scope: 0 }, 'a plain JSON value under version|domain|id')
})

test('data before its template is counted and skipped, then read once the template comes', () => {
  const store = createMemoryTemplateStore()
  const early = decodeNetflow(packet([set(256, dataRecord())]), { templates: store })
  assert.deepEqual([early.records.length, early.unknownTemplates], [0, 1], 'not a refusal: the caller decides')
  decodeNetflow(packet([templateSet(0, [template])]), { templates: store })
  const later = decodeNetflow(packet([set(256, Buffer.concat([dataRecord(), dataRecord({ srcPort: 40001 })]))]), { templates: store })
  assert.deepEqual(later.records.map((r) => r.srcPort), [40000, 40001])
  assert.equal(later.unknownTemplates, 0)
})

test('templates belong to their source ID', () => {
  const store = createMemoryTemplateStore()
  decodeNetflow(packet([templateSet(0, [template])], { sourceId: 1 }), { templates: store })
  const other = decodeNetflow(packet([set(256, dataRecord())], { sourceId: 2 }), { templates: store })
  assert.equal(other.unknownTemplates, 1)
})

test('a template sent again unchanged is not written again; a changed one replaces it', () => {
  const writes = []
  const inner = createMemoryTemplateStore()
  const store = { ...inner, get: inner.get, delete: inner.delete, keys: inner.keys, set: (key, value) => { writes.push(key); inner.set(key, value) } }
  assert.equal(decodeNetflow(packet([templateSet(0, [template])]), { templates: store }).templatesLearned, 1)
  assert.equal(decodeNetflow(packet([templateSet(0, [template])]), { templates: store }).templatesLearned, 0)
  assert.deepEqual(writes, ['9|7|256'], 'a refresh costs a durable store nothing')
  const changed = { id: 256, fields: [[8, 4], [12, 4], [1, 8]] }
  assert.equal(decodeNetflow(packet([templateSet(0, [changed])]), { templates: store }).templatesLearned, 1)
  const got = decodeNetflow(packet([set(256, Buffer.concat([ipv4('1.2.3.4'), ipv4('5.6.7.8'), uint(2n ** 40n, 8)]))]), { templates: store })
  assert.deepEqual([got.records[0].srcAddr, got.records[0].bytes], ['1.2.3.4', 2 ** 40])
})

test('an options template reads its scope by v9 scope type and its fields by name', () => {
  const store = createMemoryTemplateStore()
  // scope: Interface (2), 4 bytes; options: SAMPLING_INTERVAL (34) 4, SAMPLING_ALGORITHM (35) 1, an unknown 1000 of 2
  const options = { id: 300, scope: 1, fields: [[2, 4], [34, 4], [35, 1], [1000, 2]] }
  const body = Buffer.concat([uint(3, 4), uint(100, 4), uint(2, 1), Buffer.from('abcd', 'hex')])
  // Cisco pads an options template flowset to four bytes: 6 + 4 × 4 = 22, two bytes of padding
  const got = decodeNetflow(packet([templateSet(1, [options], { padding: 2 }), set(300, body, { padding: 1 })]), { templates: store })
  assert.deepEqual(got.options, [{ templateId: 300, scope: ['scopeInterface'], values: { scopeInterface: 3, samplingInterval: 100, samplingAlgorithm: 2, ie1000: 'abcd' } }])
  assert.deepEqual(got.records, [])
  assert.equal(store.get('9|7|300').scope, 1)
})

test('padding ends flowsets and the datagram; reserved flowset IDs are passed over', () => {
  const store = createMemoryTemplateStore()
  const got = decodeNetflow(Buffer.concat([packet([templateSet(0, [template], { padding: 3 }), set(42, Buffer.alloc(8)), set(256, dataRecord(), { padding: 2 })]), Buffer.alloc(2)]), { templates: store })
  assert.equal(got.records.length, 1)
})

test('IPv6 flows in v9 read as RFC 5952 text', () => {
  const store = createMemoryTemplateStore()
  const v6 = { id: 260, fields: [[27, 16], [28, 16], [62, 16], [1, 4]] }
  const body = Buffer.concat([ipv6('2001:DB8:0:0:1:0:0:1'), ipv6('fe80::0:1'), ipv6('2001:db8::'), uint(99, 4)])
  const [flow] = decodeNetflow(packet([templateSet(0, [v6]), set(260, body)]), { templates: store }).records
  assert.deepEqual([flow.srcAddr, flow.dstAddr, flow.nextHop, flow.bytes], ['2001:db8::1:0:0:1', 'fe80::1', '2001:db8::', 99])
})

test('malformed v9 datagrams are refused by name and leave the store as it was', () => {
  const store = createMemoryTemplateStore()
  const cases = {
    'netflow-bad-template': [
      packet([templateSet(0, [{ id: 255, fields: [[1, 4]] }])]), // template IDs start at 256
      packet([set(0, Buffer.concat([uint(256, 2), uint(0, 2)]))]), // v9 has no withdrawal: no fields is no template
      packet([templateSet(0, [{ id: 256, fields: [[82, 65535]] }])]), // nor variable lengths
      packet([templateSet(0, [{ id: 256, fields: Array.from({ length: 129 }, () => [1, 4]) }])]),
      packet([templateSet(0, [{ id: 256, fields: [[1, 0], [2, 0]] }])]), // records of no bytes
      packet([set(1, Buffer.concat([uint(256, 2), uint(3, 2), uint(4, 2), uint(1, 2), uint(4, 2)]))]), // scope length not a multiple of 4
      packet([templateSet(1, [{ id: 256, scope: 0, fields: [[34, 4]] }])]) // options without scope
    ],
    'netflow-truncated': [
      packet([templateSet(0, [template])]).subarray(0, 30),
      packet([set(0, Buffer.concat([uint(256, 2), uint(2, 2), uint(1, 2), uint(4, 2)]))]), // the second specifier is missing
      v9Packet().subarray(0, 19)
    ],
    'netflow-bad-length': [packet([set(256, Buffer.alloc(0), { length: 2 })])]
  }
  for (const [reason, packets] of Object.entries(cases)) {
    for (const [i, buf] of packets.entries()) assert.equal(reasonOf(decodeNetflow(buf, { templates: store })), reason, `${reason} #${i}`)
  }
  const refused = decodeNetflow(packet([templateSet(0, [template]), set(0, Buffer.concat([uint(257, 2), uint(0, 2)]))]), { templates: store })
  assert.equal(reasonOf(refused), 'netflow-bad-template')
  assert.equal(store.size, 0, 'a template before the fault is not kept')
})
