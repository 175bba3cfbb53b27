'use strict'
// The allow-list matcher (lib/shared/allow-list.js) against an independent
// oracle: Python's ipaddress module (test/oracles/allow-list/membership.py)
// draws random lists and addresses and says which are allowed. Parsing is
// checked against Node's own address parser (net.isIP) on mutated texts.
const test = require('node:test')
const assert = require('node:assert/strict')
const net = require('node:net')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { AllowList, allowListProblem, parseAddress } = require('../../lib/shared/allow-list')
const { writeEntry, entryAddressStart, entryAddressLength } = require('../../lib/shared/batch-codec')
const { prng } = require('../helpers/prng')

const ORACLE = path.join(__dirname, '..', 'oracles', 'allow-list', 'membership.py')

function oracleCases (request) {
  return JSON.parse(execFileSync('python3', [ORACLE], { input: JSON.stringify(request), encoding: 'utf8', maxBuffer: 64 << 20 }))
}

test('agrees with Python\'s ipaddress on random lists and addresses (strings and batch-entry bytes)', () => {
  const cases = oracleCases({ seed: 20, lists: 400, addresses: 12 })
  let checked = 0
  let allowed = 0
  const buf = Buffer.alloc(256)
  for (const { entries, addresses, allowed: expected } of cases) {
    const list = new AllowList(entries)
    addresses.forEach((address, i) => {
      const why = `${address} with allow ${entries.join(',')}`
      assert.equal(list.allows(address), expected[i], why)
      // as the native receiver hands it over: the address text inside a batch entry
      writeEntry(buf, 3, Buffer.from('x'), address, 514)
      assert.equal(list.allowsBytes(buf, entryAddressStart(3), entryAddressLength(buf, 3)), expected[i], `${why} (bytes)`)
      checked++
      if (expected[i]) allowed++
    })
  }
  assert.ok(checked > 4000, `${checked} addresses checked`)
  assert.ok(allowed > checked / 5 && allowed < checked * 4 / 5, `both outcomes are common (${allowed} of ${checked} allowed)`)
})

test('prefix ends: /0, /32, /128, the first and last address and one past each', () => {
  const list = new AllowList(['10.0.0.0/8', '192.168.1.7', '::1', 'fd00::/8', '2001:db8::/32'])
  const cases = {
    '10.0.0.0': true, '10.255.255.255': true, '9.255.255.255': false, '11.0.0.0': false,
    '192.168.1.7': true, '192.168.1.6': false, '192.168.1.8': false,
    '::1': true, '::': false, '::2': false,
    'fd00::': true, 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff': true, 'fcff:ffff:ffff:ffff:ffff:ffff:ffff:ffff': false, 'fe00::': false,
    '2001:db8::': true, '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff': true, '2001:db7:ffff:ffff:ffff:ffff:ffff:ffff': false, '2001:db9::': false,
    '::ffff:10.1.2.3': true, '::ffff:a01:203': true, '::ffff:11.1.2.3': false, '::ffff:192.168.1.7': true
  }
  for (const [address, expected] of Object.entries(cases)) assert.equal(list.allows(address), expected, address)
  const everyone4 = new AllowList(['0.0.0.0/0'])
  assert.equal(everyone4.allows('255.255.255.255'), true)
  assert.equal(everyone4.allows('0.0.0.0'), true)
  assert.equal(everyone4.allows('::ffff:1.2.3.4'), true, 'a mapped address is IPv4')
  assert.equal(everyone4.allows('::1'), false, 'IPv4 entries do not let IPv6 in')
  const everyone6 = new AllowList(['::/0'])
  assert.equal(everyone6.allows('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'), true)
  assert.equal(everyone6.allows('1.2.3.4'), false, 'IPv6 entries do not let IPv4 in')
  assert.equal(everyone6.allows('::ffff:1.2.3.4'), false, '... nor IPv4 seen through a dual-stack socket')
  const mapped = new AllowList(['::ffff:10.0.0.0/104'])
  assert.equal(mapped.allows('10.9.9.9'), true, 'a mapped entry is the IPv4 prefix')
  assert.equal(mapped.allows('11.0.0.0'), false)
})

test('host bits in an entry are ignored; overlapping and adjacent entries merge', () => {
  const list = new AllowList(['10.1.2.3/8', '10.0.0.0/9', '11.0.0.0/8', '12.0.0.1', 'fd00::1/8', 'fd00::/16'])
  assert.equal(list.allows('10.200.0.1'), true)
  assert.equal(list.allows('11.255.255.255'), true)
  assert.equal(list.allows('12.0.0.0'), false)
  assert.equal(list.allows('12.0.0.1'), true)
  assert.equal(list.allows('fd99::'), true)
  assert.deepEqual([list.v4Starts.length, list.v6Count], [2, 1])
})

test('text that is not an address is never allowed', () => {
  const list = new AllowList(['0.0.0.0/0', '::/0'])
  for (const text of ['', 'x', '1.2.3', '1.2.3.4.5', '256.1.1.1', '01.2.3.4', '1..2.3', ':', ':::', '1::2::3', '1:2:3:4:5:6:7:8:9', '::1:', 'g::1', '12345::', '::1.2.3', undefined, null, 42, 'a'.repeat(80)]) {
    assert.equal(list.allows(text), false, String(text))
  }
})

test('parses exactly what Node\'s parser accepts, on thousands of mutated address texts', () => {
  const random = prng(2020)
  const seeds = ['10.0.0.1', '192.168.255.254', '0.0.0.0', '::', '::1', 'fe80::1:2', '2001:db8:0:0:1:0:0:1', '::ffff:10.1.2.3', '1:2:3:4:5:6:7:8', '1:2:3:4:5:6:1.2.3.4', 'abcd:ef01::2345:6789']
  const alphabet = '0123456789abcdefABCDEF:.x'
  const words = new Uint32Array(4)
  let checked = 0
  for (let i = 0; i < 20000; i++) {
    let text = seeds[Math.floor(random() * seeds.length)]
    for (let m = Math.floor(random() * 3) + 1; m > 0; m--) {
      const at = Math.floor(random() * (text.length + 1))
      const c = alphabet[Math.floor(random() * alphabet.length)]
      const op = random()
      text = op < 0.4 ? text.slice(0, at) + c + text.slice(at) : op < 0.7 ? text.slice(0, at) + text.slice(at + 1) : text.slice(0, at) + c + text.slice(at + 1)
    }
    const bytes = Buffer.from(text, 'latin1')
    const family = parseAddress(bytes, 0, bytes.length, words)
    const expected = net.isIP(text)
    // a mapped IPv6 address is reported as IPv4 by design
    assert.equal(family !== 0, expected !== 0, `${JSON.stringify(text)}: ours ${family}, node ${expected}`)
    if (family === 6 || (family === 4 && expected === 4)) assert.equal(family, expected, text)
    checked++
  }
  assert.equal(checked, 20000)
})

test('a bad entry is named with the reason; an empty list is refused', () => {
  const bad = {
    '10.0.0.0/33': /prefix length 33 is over 32/,
    'fd00::/129': /prefix length 129 is over 128/,
    '': /empty entry/,
    '   ': /empty entry/,
    '1.2.3': /not an IPv4 or IPv6 address/,
    '1.2.3.4/': /prefix length must be a number/,
    '1.2.3.4/-1': /prefix length must be a number/,
    '1.2.3.4/8/8': /prefix length must be a number/,
    'fe80::1%eth0': /not an IPv4 or IPv6 address/,
    '::ffff:1.2.3.4/95': /IPv4-mapped prefix must be \/96 or longer/,
    'example.com': /not an IPv4 or IPv6 address/
  }
  for (const [entry, reason] of Object.entries(bad)) {
    const problem = allowListProblem(['10.0.0.0/8', entry])
    assert.ok(problem, entry)
    assert.equal(problem.entry, entry)
    assert.match(problem.message, reason, entry)
    assert.doesNotMatch(problem.message, /\n/)
    assert.throws(() => new AllowList([entry]), reason)
  }
  assert.match(allowListProblem([]).message, /non-empty list/)
  assert.match(allowListProblem([7]).message, /expected a string/)
  assert.equal(allowListProblem(['10.0.0.0/8', ' ::1 ', '::ffff:10.0.0.0/104']), undefined)
})

test('a link-local sender named with its zone (fe80::1%eth0, as Node reports it) is the same address as without', () => {
  const list = new AllowList(['fe80::/10'])
  assert.equal(list.allows('fe80::1%eth0'), true)
  assert.equal(list.allows('fe80::1'), true)
  assert.equal(new AllowList(['10.0.0.0/8']).allows('fe80::1%eth0'), false)
})
