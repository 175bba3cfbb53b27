'use strict'

// The syslog parser and generator: RFC 5424 and RFC 3164 tables, the raw
// fallbacks, round trips (what util-linux `logger` sends: test/integration/syslog-logger.test.js).

const test = require('node:test')
const assert = require('node:assert/strict')
const { parseSyslog, FACILITIES, SEVERITIES, REASONS, DEVIATIONS, DEFAULT_LENIENT } = require('../../collectors/syslog/parser')
const { generateSyslog } = require('../../collectors/syslog/generator')

const RECEIVED = new Date(2026, 5, 15, 12, 0, 0)

function pick (record, keys) {
  return Object.fromEntries(keys.map((k) => [k, record[k]]))
}

// ------------------------------------------------------------ RFC 5424

const RFC5424 = [
  ['RFC 5424 §6.5 example 1, BOM before MSG',
    "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \uFEFF'su root' failed for lonvick on /dev/pts/8",
    { facility: 4, severity: 2, facilityName: 'auth', severityName: 'crit', timestamp: '2003-10-11T22:14:15.003Z', host: 'mymachine.example.com', app: 'su', procid: null, msgid: 'ID47', structuredData: null, message: "'su root' failed for lonvick on /dev/pts/8" }],
  ['RFC 5424 example 2, microseconds and an offset',
    "<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It's time to make the do-nuts.",
    { facility: 20, severity: 5, timestamp: '2003-08-24T12:14:15.000Z', host: '192.0.2.1', app: 'myproc', procid: '8710', msgid: null, structuredData: null, message: "%% It's time to make the do-nuts." }],
  ['RFC 5424 example 3, SD then BOM and MSG',
    '<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"] \uFEFFAn application event log entry...',
    { structuredData: { 'exampleSDID@32473': { iut: '3', eventSource: 'Application', eventID: '1011' } }, message: 'An application event log entry...' }],
  ['RFC 5424 example 4, two SD elements and no MSG',
    '<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"]',
    { structuredData: { 'exampleSDID@32473': { iut: '3', eventSource: 'Application', eventID: '1011' }, 'examplePriority@32473': { class: 'high' } }, message: '' }],
  ['every field NILVALUE', '<14>1 - - - - - -',
    { facility: 1, severity: 6, timestamp: null, host: null, app: null, procid: null, msgid: null, structuredData: null, message: '' }],
  ['escaped quote, backslash and bracket in values',
    '<13>1 - h a - - [x@1 q="say \\"hi\\"" b="C:\\\\dir" r="a\\]b"] m',
    { structuredData: { 'x@1': { q: 'say "hi"', b: 'C:\\dir', r: 'a]b' } }, message: 'm' }],
  ['a backslash before anything else stays, with what follows (§6.3.3)',
    '<13>1 - h a - - [x@1 p="a\\nb\\\\" q="\\x"] m',
    { structuredData: { 'x@1': { p: 'a\\nb\\', q: '\\x' } }, message: 'm' }],
  ['an SD element without params, an empty value',
    '<13>1 - h a - - [flag@1][x@1 e=""] m', { structuredData: { 'flag@1': {}, 'x@1': { e: '' } }, message: 'm' }],
  ['a repeated param is kept as an array', '<13>1 - h a - - [x@1 ip="1" ip="2" ip="3"] m',
    { structuredData: { 'x@1': { ip: ['1', '2', '3'] } } }],
  ['spaces and SP inside MSG are kept', '<13>1 - h a - - -   two  spaces ', { message: '  two  spaces ' }],
  ['PRI 0', '<0>1 - h a - - - m', { facility: 0, severity: 0, facilityName: 'kern', severityName: 'emerg' }],
  ['PRI 191', '<191>1 - h a - - - m', { facility: 23, severity: 7, facilityName: 'local7', severityName: 'debug' }],
  ['leap-year day and a +hh:mm offset', '<13>1 2024-02-29T23:30:00+05:30 h a - - - m', { timestamp: '2024-02-29T18:00:00.000Z' }],
  ['UTF-8 MSG without BOM', '<13>1 - h a - - - héllo wörld ✓', { message: 'héllo wörld ✓' }]
]

for (const [name, input, expected] of RFC5424) {
  test(`5424: ${name}`, () => {
    const record = parseSyslog(input, { receivedAt: RECEIVED })
    assert.equal(record.format, '5424', record.error)
    const got = pick(record, Object.keys(expected))
    if (got.timestamp) got.timestamp = got.timestamp.toISOString()
    assert.deepEqual(got, expected)
    assert.equal(record.receivedAt, RECEIVED)
    assert.equal('raw' in record, false)
  })
}

test('5424: a BOM as UTF-8 bytes in a Buffer is stripped from MSG', () => {
  const input = Buffer.concat([Buffer.from('<13>1 - h a - - - '), Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('text')])
  assert.equal(parseSyslog(input).message, 'text')
})

test('5424: SD-IDs named like Object.prototype members are plain own data', () => {
  const record = parseSyslog('<13>1 - h a - - [__proto__ polluted="1"][constructor x="2"] m')
  assert.deepEqual(Object.keys(record.structuredData), ['__proto__', 'constructor'])
  assert.equal(record.structuredData.__proto__.polluted, '1') // eslint-disable-line no-proto -- the own SD-ID named __proto__, kept as plain data
  assert.equal({}.polluted, undefined)
  assert.equal(Object.getPrototypeOf(record.structuredData), Object.prototype)
})

// ------------------------------------------------------------ RFC 3164

const RFC3164 = [
  ['RFC 3164 §5.4 example', "<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8",
    { facility: 4, severity: 2, timestamp: [2025, 9, 11, 22, 14, 15], host: 'mymachine', app: 'su', procid: null, message: "'su root' failed for lonvick on /dev/pts/8" }],
  ['RFC 3164 example with an IP and no TAG', '<13>Feb  5 17:32:18 10.0.0.99 Use the BFG!',
    { timestamp: [2026, 1, 5, 17, 32, 18], host: '10.0.0.99', app: null, message: 'Use the BFG!' }],
  ['TAG[PID]: as logger and glibc write it', '<156>Nov 21 18:49:20 vm myapp[5863]: hello',
    { facility: 19, severity: 4, timestamp: [2025, 10, 21, 18, 49, 20], host: 'vm', app: 'myapp', procid: '5863', msgid: null, structuredData: null, message: 'hello' }],
  ['a TAG with a slash (postfix)', '<22>Jun  1 10:00:00 mx postfix/smtpd[77]: connect from x',
    { host: 'mx', app: 'postfix/smtpd', procid: '77', message: 'connect from x' }],
  ['no HOSTNAME: the TAG follows the timestamp', '<13>Jun  1 10:00:00 myapp[12]: no host here',
    { host: null, app: 'myapp', procid: '12', message: 'no host here' }],
  ['no HOSTNAME, TAG without PID', '<13>Jun  1 10:00:00 myapp: no host', { host: null, app: 'myapp', message: 'no host' }],
  ['ISO timestamp instead of BSD (rsyslog RFC3339 template)', '<13>2026-01-02T03:04:05.678+01:00 web1 nginx: GET /',
    { timestamp: '2026-01-02T02:04:05.678Z', host: 'web1', app: 'nginx', message: 'GET /' }],
  ['ISO timestamp in UTC with PID', '<13>2026-01-02T03:04:05Z host app[9]: iso', { timestamp: '2026-01-02T03:04:05.000Z', host: 'host', app: 'app', procid: '9', message: 'iso' }],
  ['no timestamp: everything after PRI is CONTENT', '<13>myapp: kernel-style line', { timestamp: null, host: null, app: 'myapp', message: 'kernel-style line' }],
  ['no timestamp and no TAG', '<13>just text', { timestamp: null, host: null, app: null, message: 'just text' }],
  ['single-space day, lower-case month', '<13>jun 1 10:00:00 h a: x', { timestamp: [2026, 5, 1, 10, 0, 0], host: 'h', app: 'a' }],
  ['year and milliseconds in the timestamp (network gear)', '<13>Jun  1 2024 10:00:00.250 h a: x', { timestamp: [2024, 5, 1, 10, 0, 0, 250], host: 'h' }],
  ['host only', '<13>Jun  1 10:00:00 lonely', { host: 'lonely', app: null, message: '' }],
  ['a word then a colon is a TAG only right before SP', '<13>Jun  1 10:00:00 h see http://x', { app: null, message: 'see http://x' }],
  ['empty [] PID', '<13>Jun  1 10:00:00 h a[]: x', { app: 'a', procid: null, message: 'x' }]
]

for (const [name, input, expected] of RFC3164) {
  test(`3164: ${name}`, () => {
    const record = parseSyslog(input, { receivedAt: RECEIVED })
    assert.equal(record.format, '3164', record.error)
    const got = pick(record, Object.keys(expected))
    if (Array.isArray(expected.timestamp)) got.timestamp = got.timestamp.getTime()
    else if (got.timestamp) got.timestamp = got.timestamp.toISOString()
    const want = { ...expected }
    if (Array.isArray(want.timestamp)) want.timestamp = new Date(...want.timestamp).getTime()
    assert.deepEqual(got, want)
  })
}

test('3164: the year is the latest that is not more than a day after receivedAt, or defaultYear', () => {
  const year = (line, receivedAt, defaultYear) => parseSyslog(line, { receivedAt, defaultYear }).timestamp.getFullYear()
  assert.equal(year('<13>Feb  5 17:32:18 h a: x', new Date(2026, 10, 21)), 2026, 'earlier this year')
  assert.equal(year('<13>Dec 31 23:59:59 h a: x', new Date(2026, 0, 1, 0, 0, 5)), 2025, 'December read in January')
  assert.equal(year('<13>Jan  1 00:00:05 h a: x', new Date(2026, 11, 31, 23, 59, 59)), 2027, 'sender seconds ahead at New Year')
  assert.equal(year('<13>Feb 29 12:00:00 h a: x', new Date(2027, 5, 1)), 2024, 'Feb 29 of the last leap year')
  assert.equal(year('<13>Oct 11 22:14:15 h a: x', new Date(2026, 0, 1), 2019), 2019)
})

// ------------------------------------------------------------ raw fallbacks

const RAW = [
  ['no priority here', 'no-pri'],
  [' <13>1 - h a - - - leading space', 'no-pri'],
  ['<999>bad pri', 'bad-pri'],
  ['<192>1 - h a - - - m', 'bad-pri'],
  ['<>1 - h a - - - m', 'bad-pri'],
  ['<1a>x', 'bad-pri'],
  ['<13', 'bad-pri'],
  ['<1000>x', 'bad-pri'],
  ['', 'empty'],
  ['\n\0', 'empty'],
  ['<13>2 - h a - - - m', 'unsupported-version'],
  ['<13>1 - h a - -', 'truncated-header'],
  ['<13>1 -  h a - - - m', 'bad-hostname'],
  ['<13>1 2026-13-45T99:00:00Z h a - - - x', 'bad-timestamp'],
  ['<13>1 2026-02-30T00:00:00Z h a - - - x', 'bad-timestamp'],
  ['<13>1 2026-01-01T00:00:60Z h a - - - leap seconds are not used', 'bad-timestamp'],
  ['<13>1 2026-01-01T00:00:00 h a - - - no offset', 'bad-timestamp'],
  ['<13>1 2003-08-24T05:14:15.000000003-07:00 h a - - - 9 fraction digits', 'bad-timestamp'],
  ['<13>1 Oct 11 22:14:15 h a - - - BSD time in 5424', 'bad-timestamp'],
  ['<13>1 1 h a - - - m', 'bad-timestamp'],
  ['<13>Feb 30 10:00:00 h a: x', 'bad-timestamp'],
  ['<13>Jun  1 24:00:00 h a: x', 'bad-timestamp'],
  ['<13>1 - h a - - [broken x', 'bad-structured-data'],
  ['<13>1 - h a - - [x@1 a="unterminated m', 'bad-structured-data'],
  ['<13>1 - h a - - [x@1 a=unquoted] m', 'bad-structured-data'],
  ['<13>1 - h a - - [x@1 a ="1"] m', 'bad-structured-data'],
  ['<13>1 - h a - - [x@1  a="1"] m', 'bad-structured-data'],
  ['<13>1 - h a - - [] m', 'bad-structured-data'],
  ['<13>1 - h a - - [x="1"] m', 'bad-structured-data'],
  ['<13>1 - h a - - [x@1]glued', 'bad-structured-data'],
  ['<13>1 - h a - - -glued', 'bad-structured-data'],
  ['<13>1 - h a - - free text without SD', 'bad-structured-data'],
  ['<13>1 - h a - - [' + 'n'.repeat(33) + '] m', 'bad-structured-data']
]

for (const [input, reason] of RAW) {
  test(`raw ${reason}: ${JSON.stringify(input).slice(0, 60)}`, () => {
    const record = parseSyslog(input, { receivedAt: RECEIVED })
    assert.deepEqual(record, { format: 'raw', message: input.replace(/[\r\n\0]+$/, ''), receivedAt: RECEIVED, error: reason })
    assert.ok(REASONS.includes(reason))
  })
}

test('raw: input that is neither text nor bytes is kept as bad-input, never thrown', () => {
  for (const input of [undefined, null, 42, {}, []]) {
    assert.deepEqual(parseSyslog(input, { receivedAt: RECEIVED }), { format: 'raw', message: '', receivedAt: RECEIVED, error: 'bad-input' })
  }
})

test('a trailing LF, CRLF or NUL is stripped; keepRaw keeps the text as received', () => {
  for (const tail of ['\n', '\r\n', '\0', '\n\0', '\r\n\r\n']) {
    assert.equal(parseSyslog(`<13>1 - h a - - - end${tail}`).message, 'end')
    assert.equal(parseSyslog(`<13>Jun  1 10:00:00 h a: end${tail}`).message, 'end')
  }
  assert.equal(parseSyslog('no pri\n').message, 'no pri')
  assert.equal(parseSyslog('<13>1 - h a - - - x\n', { keepRaw: true }).raw, '<13>1 - h a - - - x\n')
  assert.equal(parseSyslog('nope\n', { keepRaw: true }).raw, 'nope\n')
})

test('Buffer, Uint8Array view and string give the same record', () => {
  const text = '<13>1 - h a - - [x@1 k="v"] bytes'
  const bytes = Buffer.from('xx' + text)
  const view = new Uint8Array(bytes.buffer, bytes.byteOffset + 2, bytes.length - 2)
  assert.deepEqual(parseSyslog(view, { receivedAt: RECEIVED }), parseSyslog(text, { receivedAt: RECEIVED }))
  assert.deepEqual(parseSyslog(Buffer.from(text), { receivedAt: RECEIVED }), parseSyslog(text, { receivedAt: RECEIVED }))
})

test('invalid UTF-8 never throws: replacement characters, header fields intact', () => {
  const bad = Buffer.concat([Buffer.from('<13>1 - h a - - - '), Buffer.from([0xff, 0xfe, 0xc3, 0x41])])
  assert.equal(parseSyslog(bad).message, '\uFFFD\uFFFD\uFFFDA')
  assert.equal(parseSyslog(Buffer.from([0x3c, 0x31, 0x33, 0x3e, 0xff, 0xfe, 0x41])).format, '3164')
  const prefixes = ['<13>1 ', '<13>1 - h a - - [x@1 k="', '<13>Jun  1 ', '<13>', '<']
  for (let i = 0; i < 3000; i++) {
    const bytes = Buffer.from(Array.from({ length: (i % 70) + 1 }, (_, j) => (i * 31 + j * 17 + (j * j) % 7) % 256))
    const record = parseSyslog(Buffer.concat([Buffer.from(prefixes[i % prefixes.length]), bytes]))
    assert.ok(['5424', '3164', 'raw'].includes(record.format))
    if (record.format === 'raw') assert.ok(REASONS.includes(record.error), record.error)
  }
})

// ------------------------------------------------------------ generator

test('generator: RFC 5424 round trip, every field, repeated params and a BOM', () => {
  const date = new Date(Date.UTC(2026, 4, 6, 7, 8, 9, 123))
  const structuredData = { 'a@1': { k: 'v"]\\', many: ['1', '2'] }, 'origin@2': {} }
  const text = generateSyslog({ host: 'h.example', app: 'x', procid: '42', msgid: 'M1', severity: 'crit', facility: 'local7', message: 'héllo', structuredData, date, bom: true })
  assert.equal(text, '<186>1 2026-05-06T07:08:09.123Z h.example x 42 M1 [a@1 k="v\\"\\]\\\\" many="1" many="2"][origin@2] \uFEFFhéllo')
  const m = parseSyslog(text)
  assert.deepEqual(pick(m, ['format', 'host', 'app', 'procid', 'msgid', 'severityName', 'facilityName', 'message', 'structuredData']),
    { format: '5424', host: 'h.example', app: 'x', procid: '42', msgid: 'M1', severityName: 'crit', facilityName: 'local7', message: 'héllo', structuredData })
  assert.equal(m.timestamp.getTime(), date.getTime())
})

test('generator: RFC 5424 defaults and NILVALUEs', () => {
  const date = new Date(Date.UTC(2026, 0, 1))
  assert.equal(generateSyslog({ date }), '<14>1 2026-01-01T00:00:00.000Z host app - - -')
  const m = parseSyslog(generateSyslog({ host: '', app: null, date, severity: 0, facility: 0 }))
  assert.deepEqual(pick(m, ['facility', 'severity', 'host', 'app', 'message']), { facility: 0, severity: 0, host: null, app: null, message: '' })
})

test('generator: RFC 3164 round trip (local time, whole seconds)', () => {
  const date = new Date(2025, 2, 4, 5, 6, 7, 890)
  const text = generateSyslog({ format: '3164', host: 'vm', app: 'myapp', procid: 99, severity: 'warning', facility: 'local3', message: 'hello: world', date })
  assert.equal(text, '<156>Mar  4 05:06:07 vm myapp[99]: hello: world')
  const m = parseSyslog(text, { defaultYear: 2025 })
  assert.deepEqual(pick(m, ['format', 'facility', 'severity', 'host', 'app', 'procid', 'message']),
    { format: '3164', facility: 19, severity: 4, host: 'vm', app: 'myapp', procid: '99', message: 'hello: world' })
  assert.equal(m.timestamp.getTime(), new Date(2025, 2, 4, 5, 6, 7).getTime())
})

test('generator: every facility and severity round-trips by name and by code', () => {
  for (let f = 0; f < FACILITIES.length; f++) {
    for (let s = 0; s < SEVERITIES.length; s++) {
      const byName = parseSyslog(generateSyslog({ facility: FACILITIES[f], severity: SEVERITIES[s], message: 'x' }))
      const byCode = parseSyslog(generateSyslog({ format: '3164', facility: f, severity: s, message: 'x' }))
      assert.deepEqual([byName.facility, byName.severity, byCode.facilityName, byCode.severityName], [f, s, FACILITIES[f], SEVERITIES[s]])
    }
  }
})

test('generator: values a format cannot carry are InvalidOptionError naming the option', () => {
  const cases = [
    [{ format: '5425' }, 'format'],
    [{ severity: 8 }, 'severity'],
    [{ facility: 'nope' }, 'facility'],
    [{ host: 'two words' }, 'host'],
    [{ app: 'a'.repeat(49) }, 'app'],
    [{ msgid: 'm'.repeat(33) }, 'msgid'],
    [{ structuredData: { 'bad id': {} } }, 'structuredData'],
    [{ structuredData: { 'x@1': { 'a=b': '1' } } }, 'structuredData'],
    [{ date: new Date(NaN) }, 'date'],
    [{ message: 42 }, 'message'],
    [{ format: '3164', structuredData: { 'x@1': {} } }, 'structuredData'],
    [{ format: '3164', msgid: 'M' }, 'msgid'],
    [{ format: '3164', app: 'with:colon' }, 'app'],
    [{ format: '3164', procid: '1]2' }, 'procid']
  ]
  for (const [options, option] of cases) {
    assert.throws(() => generateSyslog(options), { code: 'ERR_INVALID_OPTION', option }, JSON.stringify(options))
  }
})

// ------------------------------------------------------------ named defects (each was accepted or altered before)

const REFUSED = [
  ['control character in HOSTNAME (§6: PRINTUSASCII)', '<13>1 - host\nname app - - - x', 'bad-hostname'],
  ['tab in HOSTNAME', '<13>1 - ho\tst app - - - x', 'bad-hostname'],
  ['non-ASCII in HOSTNAME', '<13>1 - hôst app - - - x', 'bad-hostname'],
  ['DEL in HOSTNAME', '<13>1 - ho\x7fst app - - - x', 'bad-hostname'],
  ['tab in APP-NAME', '<13>1 - h ap\tp - - - x', 'bad-app-name'],
  ['non-ASCII in APP-NAME', '<13>1 - h äpp - - - x', 'bad-app-name'],
  ['control character in PROCID', '<13>1 - h a 12\x013 - - x', 'bad-procid'],
  ['non-ASCII in PROCID', '<13>1 - h a 12é - - x', 'bad-procid'],
  ['tab in MSGID', '<13>1 - h a - I\tD - x', 'bad-msgid'],
  ['non-ASCII in MSGID', '<13>1 - h a - ÏD - x', 'bad-msgid'],
  ['HOSTNAME of 256 characters (§6: 1*255)', `<13>1 - ${'h'.repeat(256)} a - - - x`, 'bad-hostname'],
  ['APP-NAME of 49 characters (§6: 1*48)', `<13>1 - h ${'a'.repeat(49)} - - - x`, 'bad-app-name'],
  ['PROCID of 129 characters (§6: 1*128)', `<13>1 - h a ${'p'.repeat(129)} - - x`, 'bad-procid'],
  ['MSGID of 33 characters (§6: 1*32)', `<13>1 - h a - ${'m'.repeat(33)} - x`, 'bad-msgid'],
  ['PRI with a leading zero (§6.2.1)', '<013>1 - h a - - - x', 'pri-leading-zero'],
  ['PRI 00 (only <0> is zero)', '<00>1 - h a - - - x', 'pri-leading-zero'],
  ['PRI 0 with a leading zero, 3164', '<013>Jun  1 10:00:00 h a: x', 'pri-leading-zero'],
  ['a VERSION glued to text is broken 5424, not 3164', '<13>1x - h a - - - m', 'bad-version'],
  ['a VERSION of four digits', '<13>1000 - h a - - - m', 'bad-version'],
  ['VERSION 2 (only 1 is specified)', '<13>2 - h a - - - m', 'unsupported-version'],
  ['VERSION 999', '<13>999 - h a - - - m', 'unsupported-version'],
  ['an unescaped ] in PARAM-VALUE (§6.3.3)', '<13>1 - h a - - [x@1 p="a]b"] m', 'unescaped-bracket'],
  ['a repeated SD-ID (§6.3.2)', '<13>1 - h a - - [x@1 a="1"][y@1 b="2"][x@1 a="3"] m', 'duplicate-sd-id'],
  ['lower-case T in the timestamp (§6.2.3)', '<13>1 2026-01-01t00:00:00Z h a - - - m', 'bad-timestamp'],
  ['an offset without colon (§6.2.3)', '<13>1 2026-01-01T00:00:00+0100 h a - - - m', 'bad-timestamp']
]

for (const [name, input, reason] of REFUSED) {
  test(`refused, kept raw as ${reason}: ${name}`, () => {
    const record = parseSyslog(input, { receivedAt: RECEIVED })
    assert.equal(record.format, 'raw')
    assert.equal(record.error, reason)
    assert.equal(record.message, input)
    assert.ok(REASONS.includes(reason))
  })
}

test('every REASON is named by a case here', () => {
  const named = new Set([...REFUSED.map((c) => c[2]), ...RAW.map((c) => c[1]), 'bad-input', 'no-hostname',
    'bsd-day-zero-padded', 'bsd-day-unpadded', 'bsd-month-case', 'bsd-year', 'bsd-fraction', 'iso-timestamp', 'cisco'])
  assert.deepEqual([...REASONS].filter((r) => !named.has(r)), [])
})

test('header fields at their length limits are accepted', () => {
  const record = parseSyslog(`<13>1 - ${'h'.repeat(255)} ${'a'.repeat(48)} ${'p'.repeat(128)} ${'m'.repeat(32)} - x`)
  assert.equal(record.format, '5424', record.error)
  assert.deepEqual([record.host.length, record.app.length, record.procid.length, record.msgid.length], [255, 48, 128, 32])
})

test('years 0000-0099 are those years, not 1900-1999 (Date.UTC would shift them)', () => {
  const y99 = parseSyslog('<13>1 0099-06-01T00:00:00Z h a - - - m')
  assert.equal(y99.timestamp.toISOString(), '0099-06-01T00:00:00.000Z')
  const y0 = parseSyslog('<13>1 0000-02-29T12:00:00Z h a - - - m')
  assert.equal(y0.format, '5424', y0.error)
  assert.equal(y0.timestamp.getUTCFullYear(), 0)
  assert.equal(y0.timestamp.getUTCDate(), 29)
  assert.equal(parseSyslog('<13>1 0100-02-29T12:00:00Z h a - - - m').error, 'bad-timestamp', '100 is not a leap year')
  assert.equal(parseSyslog('<13>1 2000-02-29T12:00:00-01:30 h a - - - m').timestamp.toISOString(), '2000-02-29T13:30:00.000Z')
})

test('timestamps keep their full precision as text beside the Date', () => {
  const r = parseSyslog("<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It's time")
  assert.equal(r.timestampText, '2003-08-24T05:14:15.000003-07:00')
  assert.equal(r.timestamp.toISOString(), '2003-08-24T12:14:15.000Z')
  assert.equal(parseSyslog('<13>1 - h a - - - m').timestampText, undefined)
  assert.equal(parseSyslog('<13>Jun  1 10:00:00 h a: x', { receivedAt: RECEIVED }).timestampText, 'Jun  1 10:00:00')
})

test('invalid UTF-8 in MSG after a BOM keeps its bytes beside the text (§6.4)', () => {
  const bytes = Buffer.from([0x68, 0x69, 0xff, 0xc3, 0x28])
  const r = parseSyslog(Buffer.concat([Buffer.from('<13>1 - h a - - - \xef\xbb\xbf', 'latin1'), bytes]))
  assert.equal(r.format, '5424')
  assert.equal(r.message, 'hi\uFFFD\uFFFD(')
  assert.deepEqual(r.messageRaw, bytes)
  assert.equal(r.invalidUtf8, true)
  const ok = parseSyslog('<13>1 - h a - - - \uFEFFvalid ✓')
  assert.equal(ok.message, 'valid ✓')
  assert.equal('messageRaw' in ok || 'invalidUtf8' in ok, false)
  assert.equal(parseSyslog('<13>1 - h a - - - real \uFFFD char').invalidUtf8, undefined, 'a real U+FFFD is valid UTF-8')
})

test('invalid UTF-8 in MSG without BOM (MSG-ANY) and in 3164 and raw text keeps its bytes', () => {
  const tail = Buffer.from([0x41, 0xfe])
  for (const head of ['<13>1 - h a - - - ', '<13>Jun  1 10:00:00 h a: ', 'no pri ']) {
    const r = parseSyslog(Buffer.concat([Buffer.from(head), tail]), { receivedAt: RECEIVED })
    assert.equal(r.invalidUtf8, true, head)
    assert.deepEqual(r.messageRaw, r.format === 'raw' ? Buffer.concat([Buffer.from(head), tail]) : tail)
  }
})

test('invalid UTF-8 in a PARAM-VALUE keeps its bytes as the third entry of the param', () => {
  const value = Buffer.from([0x61, 0x80, 0x62])
  const input = Buffer.concat([Buffer.from('<13>1 - h a - - [x@1 k="'), value, Buffer.from('" ok="\\"✓"] m')])
  const r = parseSyslog(input)
  assert.equal(r.format, '5424', r.error)
  assert.equal(r.invalidUtf8, true)
  assert.deepEqual(r.sdElements, [{ id: 'x@1', params: [['k', 'a\uFFFDb', value], ['ok', '"✓']] }])
  assert.deepEqual(r.structuredData, { 'x@1': { k: 'a\uFFFDb', ok: '"✓' } })
})

test('SD elements keep their order and repeated params in sdElements', () => {
  const r = parseSyslog('<13>1 - h a - - [b@1 x="1" y="2" x="3"][a@1][c@1 e="\\]\\\\\\q"] m')
  assert.deepEqual(r.sdElements, [
    { id: 'b@1', params: [['x', '1'], ['y', '2'], ['x', '3']] },
    { id: 'a@1', params: [] },
    { id: 'c@1', params: [['e', ']\\\\q']] }])
  assert.deepEqual(r.structuredData, { 'b@1': { x: ['1', '3'], y: '2' }, 'a@1': {}, 'c@1': { e: ']\\\\q' } })
})

test('lenient duplicate-sd-id: repeated SD-IDs kept in order, flagged', () => {
  const input = '<13>1 - h a - - [x@1 a="1"][y@1 b="2"][x@1 a="3"] m'
  const r = parseSyslog(input, { lenient: ['duplicate-sd-id'] })
  assert.equal(r.format, '5424', r.error)
  assert.deepEqual(r.sdElements.map((e) => [e.id, e.params]), [['x@1', [['a', '1']]], ['y@1', [['b', '2']]], ['x@1', [['a', '3']]]])
  assert.deepEqual(r.deviations, ['duplicate-sd-id'])
})

// ------------------------------------------------------------ RFC 3164 deviations

const BSD_DEVIATIONS = [
  ['no HOSTNAME, TAG with PID right after the timestamp', '<13>Dec 27 07:16:40 su[987]: F', 'no-hostname', { host: null, app: 'su', procid: '987', message: 'F' }],
  ['day zero-padded (Dec 04)', '<13>Dec 04 07:16:40 h su: F', 'bsd-day-zero-padded', { host: 'h', timestampText: 'Dec 04 07:16:40' }],
  ['day not padded (Dec 4)', '<13>Dec 4 07:16:40 h su: F', 'bsd-day-unpadded', { host: 'h', app: 'su' }],
  ['month in lower case', '<13>dec  4 07:16:40 h su: F', 'bsd-month-case', { host: 'h' }],
  ['a year before the time', '<13>Jun  1 2024 10:00:00 h a: x', 'bsd-year', { host: 'h' }],
  ['a fraction after the seconds', '<13>Jun  1 10:00:00.250 h a: x', 'bsd-fraction', { host: 'h' }],
  ['an RFC 3339 timestamp', '<13>2026-01-02T03:04:05Z host app[9]: iso', 'iso-timestamp', { host: 'host', app: 'app', procid: '9' }],
  ['Cisco IOS: a message counter, a clock mark, a colon after the time', '<189>52: *Mar  1 00:05:14: %SYS-5-CONFIG_I: Configured', 'cisco', { msgid: '52', host: null, app: '%SYS-5-CONFIG_I', message: 'Configured' }]
]

for (const [name, input, deviation, expected] of BSD_DEVIATIONS) {
  test(`3164 ${deviation}: ${name} is read and flagged by default, refused when strict`, () => {
    const lenient = parseSyslog(input, { receivedAt: RECEIVED })
    assert.equal(lenient.format, '3164', lenient.error)
    assert.deepEqual(lenient.deviations, [deviation])
    assert.deepEqual(pick(lenient, Object.keys(expected)), expected)
    assert.ok(DEFAULT_LENIENT.includes(deviation))
    for (const options of [{ strict: true }, { lenient: DEVIATIONS.filter((d) => d !== deviation) }]) {
      const strict = parseSyslog(input, { receivedAt: RECEIVED, ...options })
      assert.deepEqual([strict.format, strict.error, strict.message], ['raw', deviation, input])
    }
  })
}

test('3164 as RFC 3164 §4.1.2 writes it is read without deviations, strict too', () => {
  for (const options of [{}, { strict: true }]) {
    const r = parseSyslog('<34>Oct  1 22:14:15 mymachine su: x', { receivedAt: RECEIVED, ...options })
    assert.deepEqual([r.format, r.host, r.app, r.message, r.deviations], ['3164', 'mymachine', 'su', 'x', undefined])
    const noStamp = parseSyslog('<13>just content', { receivedAt: RECEIVED, ...options })
    assert.deepEqual([noStamp.format, noStamp.timestamp, noStamp.message], ['3164', null, 'just content'], '§4.3.3')
  }
})

// Cisco IOS and ASA lines were refused (bad-version for the counter a digit
// begins, bad-timestamp for the colon after the time) and stored raw:
// severity, facility and time lost for the commonest network gear.
test('3164: Cisco IOS and ASA headers are read: counter as MSGID, origin name as HOST, the mnemonic as TAG, UTC read as UTC; a month\'s name that begins the content is no timestamp', () => {
  const at = (text) => parseSyslog(text, { receivedAt: new Date(Date.UTC(2026, 5, 15, 12)) })
  const cases = [
    ['<189>52: *Mar  1 00:05:14.351: %SYS-5-CONFIG_I: Configured from console by vty0', { msgid: '52', host: null, app: '%SYS-5-CONFIG_I', message: 'Configured from console by vty0', severity: 5, facility: 23 }],
    ['<189>52: router1: .Mar  1 00:05:14.351: %LINK-3-UPDOWN: Interface Gi0/1, changed state to up', { msgid: '52', host: 'router1', app: '%LINK-3-UPDOWN', message: 'Interface Gi0/1, changed state to up' }],
    ['<189>000123: Jun 15 09:30:00 UTC: %SEC-6-IPACCESSLOGP: list 101 denied', { msgid: '000123', app: '%SEC-6-IPACCESSLOGP', timestampText: 'Jun 15 09:30:00 UTC' }],
    ['<166>Jun 15 2026 11:59:59: %ASA-6-302013: Built outbound TCP connection', { host: null, app: '%ASA-6-302013', message: 'Built outbound TCP connection', severity: 6, facility: 20 }],
    ['<189>52: %SYS-5-RESTART: System restarted', { msgid: '52', timestamp: null, app: '%SYS-5-RESTART', message: 'System restarted' }]
  ]
  for (const [line, expected] of cases) {
    const r = at(line)
    assert.equal(r.format, '3164', `${line}: ${r.error}`)
    assert.ok(r.deviations.includes('cisco'), line)
    assert.deepEqual(pick(r, Object.keys(expected)), expected, line)
  }
  assert.equal(at(cases[2][0]).timestamp.toISOString(), '2026-06-15T09:30:00.000Z', 'UTC is UTC, whatever the collector\'s zone')
  const content = at('<13>May I have a word')
  assert.deepEqual([content.format, content.timestamp, content.message], ['3164', null, 'May I have a word'], '§4.3.3: no day, no timestamp')
  assert.deepEqual(pick(at('<13>Oct 11 22:14:15 SSHD: x'), ['app', 'message']), { app: 'SSHD', message: 'x' }, 'a TAG in capitals is no time zone')
  const dotted = at('<13>.Mar 3 x')
  assert.deepEqual([dotted.format, dotted.message, dotted.deviations], ['3164', '.Mar 3 x', undefined], 'no timestamp after the mark: content, as before')
  assert.equal(parseSyslog(cases[0][0], { strict: true }).error, 'cisco')
})

test('3164: a control character or non-ASCII byte in HOSTNAME is bad-hostname', () => {
  assert.equal(parseSyslog('<13>Jun  1 10:00:00 ho\x01st a: x').error, 'bad-hostname')
  assert.equal(parseSyslog('<13>Jun  1 10:00:00 hôst a: x').error, 'bad-hostname')
})

// A line that ends right after its timestamp (a TCP frame has no LF, nor has
// a datagram sent without one) threw RangeError: the message counted failed
// and was stored nowhere, not even raw.
test('every prefix of a message parses without throwing; one ending with its timestamp is 3164 with an empty message', () => {
  const lines = ['<34>Oct 11 22:14:15 mymachine su[12]: hello', '<13>Jun 15 2026 11:59:59 h a: x', '<13>Jun 15 11:59:59.123 h a: x',
    '<13>2026-06-15T11:59:59Z h a: x', '<165>1 2003-10-11T22:14:15.003Z host app - ID47 [ex@1 a="b"] \uFEFFmsg']
  for (const line of lines) {
    const bytes = Buffer.from(line)
    for (let n = 0; n <= bytes.length; n++) {
      for (const options of [{}, { strict: true }]) {
        const r = parseSyslog(bytes.subarray(0, n), { receivedAt: RECEIVED, ...options })
        if (r.format === 'raw') assert.ok(REASONS.includes(r.error), `${JSON.stringify(line.slice(0, n))}: ${r.error}`)
      }
    }
  }
  const r = parseSyslog('<13>Jan  5 10:00:00', { receivedAt: RECEIVED })
  assert.deepEqual([r.format, r.timestamp.getMonth(), r.timestamp.getDate(), r.host, r.message], ['3164', 0, 5, null, ''])
})

test('lenient names an unknown deviation: InvalidOptionError', () => {
  assert.throws(() => parseSyslog('<13>x', { lenient: ['nope'] }), { code: 'ERR_INVALID_OPTION', option: 'lenient' })
})

test('mutated messages never throw and raw ones always carry a listed reason', () => {
  let seed = 7
  const rand = (n) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n }
  const seeds = ['<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="App\\"lication"] \uFEFFAn entry',
    '<34>Oct 11 22:14:15 mymachine su[12]: hello']
  for (let i = 0; i < 5000; i++) {
    const bytes = Buffer.from(seeds[i % 2])
    for (let k = 0; k < 1 + rand(3); k++) bytes[rand(bytes.length)] = rand(256)
    for (const options of [{}, { strict: true }]) {
      const r = parseSyslog(bytes.subarray(0, bytes.length - rand(4)), options)
      if (r.format === 'raw') assert.ok(REASONS.includes(r.error), r.error)
    }
  }
})

test('what the map and the Date hold is not stored twice: sdElements and timestampText only when they say more', () => {
  const plain = parseSyslog('<13>1 2026-11-23T10:00:00.123Z h a - - [x@1 a="1" b="2"][y@1 c="3"] m')
  assert.deepEqual(plain.structuredData, { 'x@1': { a: '1', b: '2' }, 'y@1': { c: '3' } })
  assert.equal(plain.sdElements, undefined, 'the map holds it all')
  assert.equal(plain.timestampText, undefined, 'UTC with milliseconds: the Date holds it all')
  assert.equal(parseSyslog('<13>1 2026-11-23T10:00:00Z h a - - - m').timestampText, undefined)
  assert.equal(parseSyslog('<13>1 2026-11-23T10:00:00.1234Z h a - - - m').timestampText, '2026-11-23T10:00:00.1234Z')
  assert.equal(parseSyslog('<13>1 2026-11-23T10:00:00+01:00 h a - - - m').timestampText, '2026-11-23T10:00:00+01:00', 'the offset')
  const digitName = parseSyslog('<13>1 - h a - - [x@1 b="1" 2="2"] m')
  assert.deepEqual(digitName.sdElements, [{ id: 'x@1', params: [['b', '1'], ['2', '2']] }], 'an object would put "2" first')
  const adjacent = parseSyslog('<13>1 - h a - - [x@1 a="1" tag="t1" tag="t2"] m')
  assert.deepEqual(adjacent.structuredData, { 'x@1': { a: '1', tag: ['t1', 't2'] } })
  assert.equal(adjacent.sdElements, undefined, 'a repeat right after its own name: the array is in order')
  const digitId = parseSyslog('<13>1 - h a - - [b@1][9@1] m')
  assert.deepEqual(digitId.sdElements.map((e) => e.id), ['b@1', '9@1'])
})
