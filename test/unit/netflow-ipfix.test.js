'use strict'
// IPFIX (RFC 7011): templates and options templates per observation domain,
// withdrawal, variable-length and enterprise fields, reduced-size counters,
// every time element, and sequence numbers that count data records.
const test = require('node:test')
const assert = require('node:assert/strict')
const { decodeNetflow, createMemoryTemplateStore, NETFLOW_REASONS, netflowRefusal } = require('../../collectors/netflow/netflow-decoder')
const DecodeError = require('../../exceptions/decode-error')
const { READ_PAST } = require('../../collectors/netflow/shapes')
const { uint, ipv4, ipv6, varlen, ipfixMessage, set, templateSet } = require('../helpers/netflow-packets')

const EXPORT = 1795600000
const NTP_1970 = 2208988800n
const DOMAIN = 42
const message = (sets, { sequence = 1000 } = {}) => ipfixMessage({ exportTime: EXPORT, sequence, domain: DOMAIN, sets })
const reasonOf = (got) => { assert.ok(got instanceof DecodeError, `refused, got ${JSON.stringify(got)}`); return got.reason }

// sourceIPv6Address, destinationIPv6Address, ports, protocol, octetDeltaCount in 4 bytes (reduced size),
// packetDeltaCount in 8, flowStartMilliseconds, flowEndMilliseconds
const V6 = { id: 400, fields: [[27, 16], [28, 16], [7, 2], [11, 2], [4, 1], [1, 4], [2, 8], [152, 8], [153, 8]] }
const v6Record = (n = 0) => Buffer.concat([ipv6('2001:db8::a'), ipv6(`2001:db8:1:2:3:4:5:${n + 6}`), uint(5000 + n, 2), uint(53, 2), uint(17, 1), uint(1234, 4), uint(3, 8), uint(EXPORT * 1000 - 2500, 8), uint(EXPORT * 1000 - 500, 8)])

test('a template and its data: IPv6 text, reduced-size counters, absolute milliseconds, a sequence counting records', () => {
  const store = createMemoryTemplateStore()
  const got = decodeNetflow(message([templateSet(2, [V6]), set(400, Buffer.concat([v6Record(0), v6Record(1)]))]), { templates: store })
  assert.deepEqual([got.version, got.domain, got.sequence, got.nextSequence, got.exportTime], [10, DOMAIN, 1000, 1002, EXPORT * 1000])
  assert.deepEqual(got.records[1], {
    srcAddr: '2001:db8::a', dstAddr: '2001:db8:1:2:3:4:5:7', srcPort: 5001, dstPort: 53, proto: 17, packets: 3, bytes: 1234,
    first: EXPORT * 1000 - 2500, last: EXPORT * 1000 - 500, tcpFlags: 0, tos: 0, inputIf: 0, outputIf: 0, srcAs: 0, dstAs: 0, nextHop: undefined,
    reverseBytes: 0, reversePackets: 0, reverseTcpFlags: 0, samplingInterval: 0
  })
  assert.ok(store.get(`10|${DOMAIN}|400`))
})

test('every IPFIX time element reads to epoch milliseconds', () => {
  const ms = EXPORT * 1000 + 250
  const ntp = (t) => Buffer.concat([uint((BigInt(Math.floor(t / 1000)) + NTP_1970) % 2n ** 32n, 4), uint((BigInt(t % 1000) << 32n) / 1000n + 1n, 4)])
  const in2040 = Date.UTC(2040, 0, 1, 0, 0, 0, 125) // NTP era 1: its seconds field wrapped in 2036
  const cases = [
    [[150, 4], [151, 4], uint(EXPORT - 9, 4), uint(EXPORT - 1, 4), EXPORT * 1000 - 9000, EXPORT * 1000 - 1000], // seconds
    [[154, 8], [155, 8], ntp(ms - 9000), ntp(ms), ms - 9000, ms], // microseconds (NTP)
    [[156, 8], [157, 8], ntp(ms - 1), ntp(ms), ms - 1, ms], // nanoseconds (NTP)
    [[156, 8], [157, 8], ntp(in2040 - 1000), ntp(in2040), in2040 - 1000, in2040],
    [[158, 4], [159, 4], uint(9_000_500, 4), uint(1000, 4), EXPORT * 1000 - 9001, EXPORT * 1000 - 1] // µs before the export
  ]
  for (const [start, end, a, b, first, last] of cases) {
    const store = createMemoryTemplateStore()
    const [flow] = decodeNetflow(message([templateSet(2, [{ id: 500, fields: [start, end] }]), set(500, Buffer.concat([a, b]))]), { templates: store }).records
    assert.deepEqual([flow.first, flow.last], [first, last], `elements ${start[0]}/${end[0]}`)
  }
})

test('sysUpTime times count from the domain\'s systemInitTimeMilliseconds, learned from an options record', () => {
  const store = createMemoryTemplateStore()
  const init = EXPORT * 1000 - 3_600_000
  const options = { id: 256, scope: 1, fields: [[144, 4], [160, 8]] } // scope exportingProcessId, systemInitTimeMilliseconds
  const flows = { id: 1024, fields: [[8, 4], [12, 4], [22, 4], [21, 4]] }
  const flow = (start, end) => Buffer.concat([ipv4('10.0.0.1'), ipv4('10.0.0.2'), uint(start, 4), uint(end, 4)])
  const none = decodeNetflow(message([templateSet(2, [flows]), set(1024, flow(1000, 2000))]), { templates: store })
  assert.deepEqual([none.records[0].first, none.records[0].last], [undefined, undefined], 'no init time known: no guess')
  const same = decodeNetflow(message([templateSet(3, [options]), set(256, Buffer.concat([uint(1, 4), uint(init, 8)])), set(1024, flow(1000, 2000))], { sequence: 1001 }), { templates: store })
  assert.deepEqual([same.records[0].first, same.records[0].last], [init + 1000, init + 2000])
  assert.deepEqual(same.options, [{ templateId: 256, scope: ['exportingProcessId'], values: { exportingProcessId: 1, systemInitTimeMilliseconds: init } }])
  assert.equal(same.nextSequence, 1003, 'options records are data records too')
  const later = decodeNetflow(message([set(1024, flow(3_599_000, 2 ** 32 - 1))]), { templates: store })
  assert.equal(later.records[0].first, EXPORT * 1000 - 1000)
  assert.equal(later.records[0].last, init - 1, 'an uptime past the export reads as the 32-bit wrap behind it')
  const own = decodeNetflow(message([templateSet(2, [{ id: 1025, fields: [[160, 8], [22, 4]] }]), set(1025, Buffer.concat([uint(init + 5, 8), uint(10, 4)]))]), { templates: store })
  assert.equal(own.records[0].first, init + 15, 'a record\'s own init time comes first')
})

test('variable-length fields in both prefix forms, enterprise fields, and unknown elements are read past and counted', () => {
  const store = createMemoryTemplateStore()
  // sourceIPv4Address, interfaceName (variable), a vendor's element (enterprise 9), an unassigned one, destinationTransportPort
  const t = { id: 600, fields: [[8, 4], [82, 65535], [100, 6, 9], [999, 65535, 29305], [11, 2]] }
  const body = Buffer.concat([
    ipv4('192.0.2.1'), varlen(Buffer.from('eth0')), Buffer.alloc(6, 0xee), varlen(Buffer.alloc(300, 1)), uint(443, 2),
    ipv4('192.0.2.2'), varlen(Buffer.from('eth1'), { long: true }), Buffer.alloc(6), varlen(Buffer.alloc(0)), uint(8443, 2)
  ])
  const got = decodeNetflow(message([templateSet(2, [t]), set(600, body)]), { templates: store })
  assert.deepEqual(got.records.map((r) => [r.srcAddr, r.dstPort]), [['192.0.2.1', 443], ['192.0.2.2', 8443]])
  assert.equal(got.unknownFields, 6, 'three read past per record')
  assert.deepEqual(got.records.map((r) => r[READ_PAST]), [['interfaceName', '9.100', '29305.999'], ['interfaceName', '9.100', '29305.999']], 'each record names what it read past')
  assert.deepEqual(store.get('10|42|600').fields[2], [100, 6, 9], 'the enterprise number kept with its element')
  const options = { id: 601, scope: 1, fields: [[10, 4], [82, 65535], [100, 2, 9]] }
  const opt = decodeNetflow(message([templateSet(3, [options]), set(601, Buffer.concat([uint(5, 4), varlen(Buffer.from('uplink\0\0'), { long: true }), uint(0xbeef, 2)]))]), { templates: store })
  assert.deepEqual(opt.options[0].values, { ingressInterface: 5, interfaceName: 'uplink', '9.100': 'beef' })
})

test('withdrawal: one template by ID, all data templates by ID 2, all options templates by ID 3', () => {
  const store = createMemoryTemplateStore()
  const data = (id) => ({ id, fields: [[8, 4]] })
  const opts = (id) => ({ id, scope: 1, fields: [[10, 4], [34, 4]] })
  const learn = decodeNetflow(message([templateSet(2, [data(300), data(301), data(302)]), templateSet(3, [opts(310), opts(311)])]), { templates: store })
  assert.equal(learn.templatesLearned, 5)
  const one = decodeNetflow(message([templateSet(2, [{ id: 300, withdraw: true }]), set(300, ipv4('1.1.1.1')), set(301, ipv4('1.1.1.2'))]), { templates: store })
  assert.deepEqual([one.templatesWithdrawn, one.unknownTemplates, one.records.length], [1, 1, 1], 'withdrawn at once, for the rest of the message too')
  const allData = decodeNetflow(message([templateSet(2, [{ id: 2, withdraw: true }])]), { templates: store })
  assert.equal(allData.templatesWithdrawn, 2)
  assert.deepEqual(store.keys('10|42|').sort(), ['10|42|310', '10|42|311'], 'options templates stay')
  const allOptions = decodeNetflow(message([templateSet(3, [{ id: 3, withdraw: true }]), templateSet(3, [opts(312)])]), { templates: store })
  assert.deepEqual([allOptions.templatesWithdrawn, allOptions.templatesLearned], [2, 1])
  assert.deepEqual(store.keys('10|42|'), ['10|42|312'], 'a template after the withdrawal is kept')
  const again = decodeNetflow(message([templateSet(3, [{ id: 312, withdraw: true }, opts(312)]), set(312, Buffer.concat([uint(1, 4), uint(64, 4)]))]), { templates: store })
  assert.deepEqual([again.templatesWithdrawn, again.templatesLearned, again.options.length], [0, 0, 1], 'withdrawn and taught again unchanged: nothing to write')
  assert.deepEqual(again.options[0].values, { ingressInterface: 1, samplingInterval: 64 })
})

test('padding ends template and data sets; reserved set IDs are passed over', () => {
  const store = createMemoryTemplateStore()
  const got = decodeNetflow(message([templateSet(2, [V6], { padding: 3 }), set(4, Buffer.alloc(4)), set(400, v6Record(), { padding: 7 })]), { templates: store })
  assert.equal(got.records.length, 1)
})

test('a data set of an unknown template is counted, its records absent, the next sequence unknown', () => {
  const got = decodeNetflow(message([set(400, v6Record())]), { templates: createMemoryTemplateStore() })
  assert.deepEqual([got.unknownTemplates, got.records.length, got.nextSequence], [1, 0, undefined])
  assert.equal(netflowRefusal('netflow-unknown-template').reason, 'netflow-unknown-template', 'the caller\'s refusal, by name')
})

test('counters of 2^53 and more are refused, not rounded', () => {
  const store = createMemoryTemplateStore()
  const t = templateSet(2, [{ id: 700, fields: [[8, 4], [1, 8]] }])
  const ok = decodeNetflow(message([t, set(700, Buffer.concat([ipv4('1.2.3.4'), uint(2n ** 53n - 1n, 8)]))]), { templates: store })
  assert.equal(ok.records[0].bytes, Number.MAX_SAFE_INTEGER)
  assert.equal(reasonOf(decodeNetflow(message([set(700, Buffer.concat([ipv4('1.2.3.4'), uint(2n ** 53n, 8)]))]), { templates: store })), 'netflow-counter-too-large')
  const seven = templateSet(2, [{ id: 701, fields: [[2, 7]] }])
  assert.equal(reasonOf(decodeNetflow(message([seven, set(701, uint(2n ** 53n, 7))]), { templates: store })), 'netflow-counter-too-large', 'reduced-size too')
})

test('a store that hands back JSON copies (a durable one) decodes the same', () => {
  const map = new Map()
  const durable = { get: (k) => map.has(k) ? JSON.parse(map.get(k)) : undefined, set: (k, v) => map.set(k, JSON.stringify(v)), delete: (k) => map.delete(k), keys: (p) => [...map.keys()].filter((k) => k.startsWith(p)) }
  decodeNetflow(message([templateSet(2, [V6])]), { templates: durable })
  const got = decodeNetflow(message([set(400, v6Record())]), { templates: durable })
  assert.equal(got.records[0].dstAddr, '2001:db8:1:2:3:4:5:6')
  map.set('10|42|400', JSON.stringify({ fields: 'garbage', scope: 0 }))
  assert.equal(decodeNetflow(message([set(400, v6Record())]), { templates: durable }).unknownTemplates, 1, 'a value that is no template is no template')
})

test('a store that refuses a write (the framework\'s kept state when full) refuses the message with its own error', () => {
  const full = new DecodeError('keptFull')
  const store = { get: () => undefined, set: () => { throw full }, delete: () => false, keys: () => [] }
  assert.throws(() => decodeNetflow(message([templateSet(2, [V6])]), { templates: store }), (err) => err === full)
})

test('the in-memory store holds at most max keys, evicting the least recently written', () => {
  const store = createMemoryTemplateStore({ max: 2 })
  decodeNetflow(message([templateSet(2, [{ id: 256, fields: [[8, 4]] }, { id: 257, fields: [[8, 4]] }, { id: 258, fields: [[8, 4]] }])]), { templates: store })
  assert.deepEqual([store.size, store.evicted, store.keys('')], [2, 1, ['10|42|257', '10|42|258']])
  assert.throws(() => createMemoryTemplateStore({ max: 0 }), /max/)
})

test('bytes too few for one more record end a set as padding when zeros or under four; four or more of anything else are a record cut short, refused', () => {
  const store = createMemoryTemplateStore()
  decodeNetflow(message([templateSet(2, [V6])]), { templates: store })
  assert.equal(decodeNetflow(message([set(400, Buffer.concat([v6Record(), Buffer.alloc(60)]))]), { templates: store }).records.length, 1, 'zeros')
  assert.equal(decodeNetflow(message([set(400, Buffer.concat([v6Record(), Buffer.from([1, 2, 3])]))]), { templates: store }).records.length, 1, 'under four bytes')
  assert.equal(reasonOf(decodeNetflow(message([set(400, Buffer.concat([v6Record(), v6Record().subarray(0, 60)]))]), { templates: store })), 'netflow-truncated')
  // Data of a layout the exporter changed, shorter than the template kept: no flow read, and before, none counted either.
  assert.equal(reasonOf(decodeNetflow(message([set(400, v6Record().subarray(0, 40))]), { templates: store })), 'netflow-truncated')
})

test('a time past what a Date holds is refused (it failed every write of its datagram), one within it stored', () => {
  const store = createMemoryTemplateStore()
  const t = templateSet(2, [{ id: 702, fields: [[8, 4], [153, 8]] }]) // flowEndMilliseconds
  const at = (ms) => decodeNetflow(message([t, set(702, Buffer.concat([ipv4('1.2.3.4'), uint(ms, 8)]))]), { templates: store })
  assert.equal(at(8.64e15).records[0].last, 8.64e15)
  assert.equal(reasonOf(at(8.64e15 + 1)), 'netflow-counter-too-large')
  assert.equal(reasonOf(at(2 ** 53 - 1)), 'netflow-counter-too-large')
})

test('malformed IPFIX messages are refused by name and leave the store as it was', () => {
  const store = createMemoryTemplateStore()
  const variable = templateSet(2, [{ id: 600, fields: [[82, 65535]] }])
  const cases = {
    'netflow-bad-length': [
      ipfixMessage({ length: 16, sets: [templateSet(2, [V6])] }), // the header says less than was sent
      message([templateSet(2, [V6]), set(400, Buffer.alloc(0), { length: 3 })]),
      ipfixMessage({ sets: [templateSet(2, [V6]), Buffer.alloc(2)] }) // bytes after the last set
    ],
    'netflow-truncated': [
      message([templateSet(2, [V6])]).subarray(0, 15),
      ipfixMessage({ length: 100 }),
      message([templateSet(2, [V6]), set(400, Buffer.alloc(0), { length: 40 })]),
      message([set(3, Buffer.concat([uint(256, 2), uint(1, 2), uint(0, 1)]))]), // no scope field count
      message([set(2, Buffer.concat([uint(256, 2), uint(2, 2), uint(8, 2), uint(4, 2)]))]), // the second specifier missing
      message([set(2, Buffer.concat([uint(256, 2), uint(1, 2), uint(0x8000 | 100, 2), uint(4, 2)]))]), // no enterprise number
      message([variable, set(600, Buffer.from([10, 1, 2]))]), // a value running past its set
      message([variable, set(600, Buffer.from([255, 0]))]) // a three-byte length prefix cut
    ],
    'netflow-bad-template': [
      message([templateSet(3, [{ id: 256, scope: 0, fields: [[10, 4]] }])]),
      message([templateSet(3, [{ id: 256, scope: 2, fields: [[10, 4]] }])]),
      message([templateSet(2, [{ id: 100, withdraw: true }])]),
      message([templateSet(2, [{ id: 256, fields: [[8, 4]] }, { id: 3, withdraw: true }])]), // 3 withdraws all only in an options set
      message([templateSet(2, [{ id: 256, fields: Array.from({ length: 129 }, () => [8, 4]) }])])
    ],
    'netflow-bad-version': [Buffer.from('000100000000', 'hex')]
  }
  for (const [reason, messages] of Object.entries(cases)) {
    for (const [i, buf] of messages.entries()) assert.equal(reasonOf(decodeNetflow(buf, { templates: store })), reason, `${reason} #${i}`)
  }
  assert.equal(store.size, 0, 'nothing learned from a refused message')
  const covered = new Set([...Object.keys(cases), 'netflow-counter-too-large', 'netflow-bad-count', 'netflow-unknown-template', 'netflow-too-many-records'])
  assert.deepEqual([...covered].sort(), [...NETFLOW_REASONS].sort(), 'every reason has a case here or in the v5, counter and maxRecords tests')
})

test('more records than maxRecords refuse the datagram as soon as they are read (a 1-byte template fans 65,000 records out of one datagram)', () => {
  const TINY = { id: 401, fields: [[4, 1]] } // protocolIdentifier alone
  const datagram = (n) => message([templateSet(2, [TINY]), set(401, Buffer.alloc(n, 17))])
  const store = createMemoryTemplateStore()
  assert.equal(decodeNetflow(datagram(999), { templates: store, maxRecords: 999 }).records.length, 999)
  assert.equal(reasonOf(decodeNetflow(datagram(1000), { templates: createMemoryTemplateStore(), maxRecords: 999 })), 'netflow-too-many-records')
  assert.equal(reasonOf(decodeNetflow(datagram(65000), { templates: createMemoryTemplateStore(), maxRecords: 999 })), 'netflow-too-many-records')
  const readAll = decodeNetflow(datagram(65000), { templates: createMemoryTemplateStore() })
  assert.equal(readAll.records.length, 65000, 'without a bound every record is read')
  assert.ok(NETFLOW_REASONS.includes('netflow-too-many-records'))
})

test('an RFC 5103 biflow: the reverse counters (enterprise 29305) are the record\'s reverse fields, delta or total; samplingInterval and samplerRandomInterval are its sampling', () => {
  const store = createMemoryTemplateStore()
  // addresses, octetDeltaCount, packetDeltaCount, tcpControlBits, their reverse ones, reverse ipClassOfService (not read), samplingInterval
  const delta = { id: 700, fields: [[8, 4], [12, 4], [1, 4], [2, 4], [6, 1], [1, 4, 29305], [2, 4, 29305], [6, 1, 29305], [5, 1, 29305], [34, 4]] }
  // octetTotalCount, packetTotalCount, and their reverse ones (8 bytes), samplerRandomInterval
  const total = { id: 701, fields: [[8, 4], [12, 4], [85, 8], [86, 8], [85, 8, 29305], [86, 8, 29305], [50, 2]] }
  const got = decodeNetflow(message([templateSet(2, [delta, total]),
    set(700, Buffer.concat([ipv4('10.0.0.1'), ipv4('10.0.0.2'), uint(461, 4), uint(7, 4), uint(0x1b, 1), uint(25881, 4), uint(19, 4), uint(0x19, 1), uint(0, 1), uint(10, 4)])),
    set(701, Buffer.concat([ipv4('10.0.0.3'), ipv4('10.0.0.4'), uint(100, 8), uint(1, 8), uint(2 ** 40, 8), uint(900, 8), uint(64, 2)]))]), { templates: store })
  const pick = (r) => [r.bytes, r.packets, r.tcpFlags, r.reverseBytes, r.reversePackets, r.reverseTcpFlags, r.samplingInterval]
  assert.deepEqual(got.records.map(pick), [[461, 7, 0x1b, 25881, 19, 0x19, 10], [100, 1, 0, 2 ** 40, 900, 0, 64]])
  assert.equal(got.unknownFields, 1, 'the reverse class of service is read past')
  assert.deepEqual(got.records[0][READ_PAST], ['29305.5'])
})
