'use strict'

// The rule the syslog collector stores SD-IDs and PARAM-NAMEs by as keys of
// `structuredData` (collectors/syslog/sd-names.js), checked against the URL
// decoder docs/protocols.md tells users to apply, and on what the parser builds.

const test = require('node:test')
const assert = require('node:assert/strict')
const { encodeSdName, decodeSdName } = require('../../collectors/syslog/sd-names')
const { parseSyslog } = require('../../collectors/syslog/parser')
const { prng } = require('../helpers/prng')
const root = require('../..')

const PRINTABLE = [...Array(94)].map((_, i) => String.fromCharCode(0x21 + i))

test('sd-names: %, . and $ are percent-encoded, anything else stays as sent', () => {
  const table = [
    ['$where', '%24where'], ['a.b', 'a%2Eb'], ['$set', '%24set'], ['%', '%25'], ['%2E', '%252E'], ['a$b', 'a%24b'],
    ['.$%', '%2E%24%25'], ['exampleSDID@32473', 'exampleSDID@32473'], ['__proto__', '__proto__'], ['constructor', 'constructor'],
    ['x', 'x'], ['!#&\'()*+,-/:;<>?[\\^_`{|}~', '!#&\'()*+,-/:;<>?[\\^_`{|}~']
  ]
  for (const [name, key] of table) {
    assert.equal(encodeSdName(name), key, name)
    assert.equal(decodeSdName(key), name, key)
    assert.equal(decodeURIComponent(key), name, `any URL decoder gives ${name} back`)
  }
})

test('sd-names: on seeded random names over printable ASCII the rule is reversible, one-to-one and leaves no $ or .', () => {
  const rand = prng(5424)
  const keys = new Map()
  for (let i = 0; i < 20000; i++) {
    let name = ''
    for (let n = 1 + Math.floor(rand() * 6); n > 0; n--) name += rand() < 0.4 ? '%.$2E4'[Math.floor(rand() * 6)] : PRINTABLE[Math.floor(rand() * PRINTABLE.length)]
    const key = encodeSdName(name)
    assert.ok(!key.includes('.') && !key.includes('$'), key)
    assert.equal(decodeSdName(key), name)
    assert.equal(decodeURIComponent(key), name)
    assert.ok(!keys.has(key) || keys.get(key) === name, `${name} and ${keys.get(key)} share ${key}`)
    keys.set(key, name)
  }
  assert.equal(decodeSdName('a%2eb'), 'a.b', 'lower-case hex is read too, as a URL decoder does')
})

test('sd-names: exported from the package', () => {
  assert.equal(root.encodeSdName('a.b'), 'a%2Eb')
  assert.equal(root.decodeSdName('%24x'), '$x')
})

test('the parser keys structuredData by encoded names, sdElements keeps them as sent; Object.prototype names stay plain own data', () => {
  const r = parseSyslog('<13>1 - h a - - [$where x="1"][ex@1 a.b="1" $set="2" %41="3"][__proto__ polluted="1" __proto__="p" __proto__="q"][constructor prototype="x"] m')
  assert.equal(r.format, '5424', r.error)
  assert.deepEqual(Object.keys(r.structuredData), ['%24where', 'ex@1', '__proto__', 'constructor'])
  assert.deepEqual({ ...r.structuredData['ex@1'] }, { 'a%2Eb': '1', '%24set': '2', '%2541': '3' })
  const proto = Object.getOwnPropertyDescriptor(r.structuredData, '__proto__').value
  assert.deepEqual(Object.getOwnPropertyDescriptor(proto, '__proto__').value, ['p', 'q'], 'a repeated __proto__ param is an own array')
  assert.equal(proto.polluted, '1')
  assert.equal(Object.getPrototypeOf(r.structuredData), Object.prototype)
  assert.equal(Object.getPrototypeOf(proto), Object.prototype)
  assert.equal(r.structuredData.constructor.prototype, 'x')
  assert.equal(({}).polluted, undefined)
  assert.equal(r.sdElements, undefined, 'the map says it all: names decode back and nothing repeats out of order')
  const dup = parseSyslog('<13>1 - h a - - [x.1 a="1"][x%2E1 a="2"] m')
  assert.deepEqual(Object.keys(dup.structuredData), ['x%2E1', 'x%252E1'], 'names that only differ by an escape stay apart')
  const ordered = parseSyslog('<13>1 - h a - - [x@1 a.b="1" c="2" a.b="3"] m')
  assert.deepEqual(ordered.structuredData, { 'x@1': { 'a%2Eb': ['1', '3'], c: '2' } })
  assert.deepEqual(ordered.sdElements, [{ id: 'x@1', params: [['a.b', '1'], ['c', '2'], ['a.b', '3']] }])
})
