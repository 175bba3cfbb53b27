'use strict'
// The one declaration of what the codec reads (fields.js) against the
// record shape (shapes.js) and the reader's operations (data-records.js),
// and the RFC 5952 text of IPv6 addresses.
const test = require('node:test')
const assert = require('node:assert/strict')
const { INFORMATION_ELEMENTS, REVERSE_ELEMENTS, TYPE_SIZES } = require('../../collectors/netflow/fields')
const { OPS } = require('../../collectors/netflow/data-records')
const { newFlow } = require('../../collectors/netflow/shapes')
const { ipv6Text } = require('../../lib/shared/ipv6-text')
const { ipv6 } = require('../helpers/netflow-packets')
const { prng } = require('../helpers/prng')

test('every element a flow record holds has a reader operation and a key of the record', () => {
  const keys = Object.keys(newFlow())
  for (const [id, name, type, key] of [...INFORMATION_ELEMENTS, ...REVERSE_ELEMENTS]) {
    assert.ok(type in TYPE_SIZES, `${name}: type ${type}`)
    if (key === undefined) continue
    assert.ok(keys.includes(key), `${name} → ${key}`)
    assert.ok(OPS[`${key}:${type}`], `${id} ${name}: no operation for ${key}:${type}`)
  }
  const used = new Set([...INFORMATION_ELEMENTS, ...REVERSE_ELEMENTS].map(([, , type, key]) => `${key ?? type}:${type}`))
  assert.deepEqual(Object.keys(OPS).filter((op) => !used.has(op)), [], 'no operation without an element')
})

test('the element table names each ID once, with the RFC 7012 numbers the brief lists', () => {
  const ids = INFORMATION_ELEMENTS.map(([id]) => id)
  assert.equal(new Set(ids).size, ids.length)
  const named = Object.fromEntries(INFORMATION_ELEMENTS.map(([id, name]) => [name, id]))
  assert.deepEqual([named.sourceIPv4Address, named.destinationIPv4Address, named.sourceIPv6Address, named.destinationIPv6Address, named.sourceTransportPort,
    named.destinationTransportPort, named.protocolIdentifier, named.octetDeltaCount, named.packetDeltaCount, named.flowStartSysUpTime, named.flowEndSysUpTime,
    named.flowStartSeconds, named.flowEndSeconds, named.flowStartMilliseconds, named.flowEndMilliseconds, named.ingressInterface, named.egressInterface,
    named.tcpControlBits, named.ipClassOfService, named.bgpSourceAsNumber, named.bgpDestinationAsNumber, named.ipNextHopIPv4Address],
  [8, 12, 27, 28, 7, 11, 4, 1, 2, 22, 21, 150, 151, 152, 153, 10, 14, 6, 5, 16, 17, 15])
})

test('IPv6 text is RFC 5952: lower case, no leading zeros, the longest (first) zero run as ::, never one group', () => {
  const cases = {
    '2001:0DB8:0000:0000:0000:0000:0000:0001': '2001:db8::1',
    '0:0:0:0:0:0:0:0': '::',
    '0:0:0:0:0:0:0:1': '::1',
    '2001:db8:0:1:1:1:1:1': '2001:db8:0:1:1:1:1:1',
    '2001:db8:0:0:1:0:0:1': '2001:db8::1:0:0:1',
    '2001:0:0:1:0:0:0:1': '2001:0:0:1::1',
    'fe80:0:0:0:0:0:0:0': 'fe80::',
    '1:2:3:4:5:6:7:8': '1:2:3:4:5:6:7:8'
  }
  for (const [input, text] of Object.entries(cases)) assert.equal(ipv6Text(ipv6(input), 0), text, input)
})

test('IPv6 text equals the WHATWG URL serializer\'s (the same compression rule) on 5,000 seeded addresses, zero groups likely', () => {
  const rand = prng(5952)
  for (let n = 0; n < 5000; n++) {
    const bytes = Buffer.alloc(16)
    for (let g = 0; g < 8; g++) {
      const r = rand()
      const value = r < 0.5 ? 0 : r < 0.7 ? Math.floor(rand() * 16) : r < 0.8 ? Math.floor(rand() * 256) : Math.floor(rand() * 65536)
      bytes.writeUInt16BE(value, 2 * g)
    }
    const full = Array.from({ length: 8 }, (_, g) => bytes.readUInt16BE(2 * g).toString(16)).join(':')
    assert.equal(`[${ipv6Text(bytes, 0)}]`, new URL(`http://[${full}]/`).hostname, full)
  }
})
