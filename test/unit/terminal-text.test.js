'use strict'

// Sender-chosen text on a person's terminal: printable() shows every
// character a terminal would act on as escape text, printableJson() keeps
// JSON valid and equal, formatTable() and the readable log lines use them.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const pino = require('pino')
const { printable, printableJson, displayWidth, rawTextShown } = require('../../app/terminal-text')
const { formatTable } = require('../../app/commands/common')
const { lineFormatter, prettyStream } = require('../../app/pretty-log')
const { removeDir } = require('../helpers/temp-dir')

// What must not reach a terminal raw (written out here, not taken from the module).
// eslint-disable-next-line no-control-regex -- naming the control characters is the point
const FORBIDDEN = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2069\u3164\ufeff\u{e0000}-\u{e007f}]/u
const HOSTILE = 'a\x1b]0;pwned\x07b\x1b[2K\r FAKE\n\t\x00\x7f\u0085\u009b\u202aX\u202eY\u2066Z\u2069\u200b\u200d\ufeff\u00ad\u2028\u2029\u{e0041}\ud800'

test('printable writes every control, bidi and invisible format character as escape text', () => {
  assert.equal(printable('\x1b]0;pwned\x07'), '\\x1b]0;pwned\\x07')
  assert.equal(printable('\r FAKE LINE\n\t'), '\\r FAKE LINE\\n\\t')
  assert.equal(printable('\x00\x1f\x7f\x80\x9b\x9f'), '\\x00\\x1f\\x7f\\x80\\x9b\\x9f')
  assert.equal(printable('\u202a\u202e\u2066\u2069\u200e\u061c'), '\\u202a\\u202e\\u2066\\u2069\\u200e\\u061c')
  assert.equal(printable('\u200b\ufeff\u00ad\u2028\u2029\u{e0041}\ud800'), '\\u200b\\ufeff\\xad\\u2028\\u2029\\u{e0041}\\ud800')
  assert.equal(printable('\u3164\u2065'), '\\u3164\\u2065', 'an invisible letter and a code point reserved for an invisible one')
  assert.doesNotMatch(printable(HOSTILE), FORBIDDEN)
})

test('printable leaves printable text as it is, and doubles a backslash so a typed escape differs from ours', () => {
  for (const text of ['sip:+4930123@example.org', 'café 山田 ☎ 😀', 'e\u0301', '-', '  worker 1']) assert.equal(printable(text), text)
  assert.equal(printable('\\x1b'), '\\\\x1b')
  assert.notEqual(printable('\\x1b'), printable('\x1b'))
  assert.equal(printable(42), '42')
})

test('rawTextShown keeps lines, tabs and a SIP quoted pair as sent; in a text it escapes, a backslash is doubled so a sender\'s "\\x1b" differs from an ESC', () => {
  assert.equal(rawTextShown('From: "A\\"B" <sip:a@b>\r\n\tX: y'), 'From: "A\\"B" <sip:a@b>\r\n\tX: y')
  assert.equal(rawTextShown('S: \\x1b typed, \u001b sent\r\n'), 'S: \\\\x1b typed, \\x1b sent\r\n')
  assert.equal(rawTextShown('\u202eevil'), '\\u202eevil')
})

test('rawTextShown writes a CR that no LF follows as escape text: a browser draws it as a line break, a terminal returns the cursor, either a line the sender made up', () => {
  assert.equal(rawTextShown('Subject: hi\rFAKE: line\r\nX: y\r'), 'Subject: hi\\rFAKE: line\r\nX: y\\r')
  assert.equal(rawTextShown('A: "q\\"\rB'), 'A: "q\\\\"\\rB', 'with something escaped, the backslash is doubled too')
})

test('every code point up to U+FFFF and the tag characters: printable output has no forbidden character', () => {
  for (let code = 0; code <= 0xffff; code += 1) assert.doesNotMatch(printable(String.fromCharCode(code)), FORBIDDEN, `U+${code.toString(16)}`)
  for (let code = 0xe0000; code <= 0xe007f; code += 1) assert.doesNotMatch(printable(String.fromCodePoint(code)), FORBIDDEN)
})

test('printableJson is JSON of the same value, with no forbidden character in it', () => {
  const value = { id: HOSTILE, nested: [{ user: '\u202eroot' }], plain: 'a\\b "c"' }
  for (const space of [undefined, 2]) {
    const json = printableJson(value, space)
    assert.deepEqual(JSON.parse(json), value)
    assert.doesNotMatch(json.replace(/\n/g, ''), FORBIDDEN)
  }
  assert.match(printableJson('\u202e\u009b\u{e0041}'), /^"\\u202e\\u009b\\udb40\\udc41"$/)
})

test('displayWidth counts the columns a terminal gives: wide characters two, combining marks none', () => {
  assert.equal(displayWidth('abc'), 3)
  assert.equal(displayWidth('山田'), 4)
  assert.equal(displayWidth('ＡＢ'), 4)
  assert.equal(displayWidth('e\u0301'), 1)
  assert.equal(displayWidth('😀'), 2)
  assert.equal(displayWidth('LOSS% F→T'), 9)
})

test('formatTable escapes its cells and aligns the columns on the escaped, displayed width', () => {
  const columns = [{ key: 'id', title: 'ID', align: 'left' }, { key: 'name', title: 'NAME', align: 'left' }, { key: 'n', title: 'N' }]
  const rows = [{ id: '\x1b[2K', name: '山田', n: 1 }, { id: '\r FAKE\nLINE', name: '\u202eabc', n: 22.5 }, { id: 'x', name: null, n: 333 }]
  const text = formatTable(columns, rows)
  assert.doesNotMatch(text.replace(/\n/g, ''), FORBIDDEN)
  const lines = text.trimEnd().split('\n')
  assert.equal(lines.length, 4, 'a header and one line per row')
  assert.deepEqual(lines, [
    'ID             NAME          N',
    '\\x1b[2K        山田          1',
    '\\r FAKE\\nLINE  \\u202eabc  22.5',
    'x              -           333'
  ])
  assert.equal(new Set(lines.map(displayWidth)).size, 1, 'every line as wide on screen')
})

test('readable log lines (collector logs) escape what a record carries, and keep a stack on its lines', () => {
  const format = lineFormatter()
  const error = new Error('bad \x1b[2K')
  const record = JSON.stringify({ level: 40, time: 0, msg: 'from \x1b]0;pwned\x07 \u202eX', cname: '\u009b2J\u2028', err: { type: 'Error', message: error.message, stack: error.stack } })
  const line = format(record)
  assert.doesNotMatch(line.replace(/\n/g, ''), FORBIDDEN)
  assert.match(line, /WARN: from \\x1b\]0;pwned\\x07 \\u202eX/)
  assert.match(line, /\n\s+at /, 'the stack\'s frames on lines of their own')
  assert.equal(format('not json \x1b[2K\r'), 'not json \\x1b[2K\\r', 'a line that is not a record is escaped too')
  assert.doesNotMatch(format('{"level":30,"msg":"x"'), FORBIDDEN, 'nor is a broken record let through')
})

test('readable log lines: an error whose message the line says is its type and code on the line, not a block repeating it', () => {
  const format = lineFormatter()
  const message = 'cannot listen on 127.0.0.1:5514 (udp): address already in use (EADDRINUSE)'
  const fatal = format(JSON.stringify({ level: 60, time: 0, msg: `collector failed to start: ${message}`, collector: 'syslog', error: { type: 'ListenError', code: 'ERR_LISTEN', message } }))
  assert.equal(fatal.split('\n').length, 1, fatal)
  assert.match(fatal, /FATAL: collector failed to start: cannot listen .*"errorType":"ListenError","errorCode":"ERR_LISTEN"/)
  const warn = format(JSON.stringify({ level: 40, time: 0, msg: 'database unreachable (connect ECONNREFUSED 127.0.0.1:1); holding messages', error: 'connect ECONNREFUSED 127.0.0.1:1' }))
  assert.equal(warn.split('\n').length, 1, warn)
  const other = format(JSON.stringify({ level: 50, time: 0, msg: 'write failed', error: { type: 'MongoError', message: 'E11000 duplicate key' } }))
  assert.match(other, /E11000 duplicate key/, 'an error the line does not say is kept')
})

test('a collector\'s readable log on its terminal (prettyStream) escapes what a record carries', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pretty-log-'))
  t.after(() => removeDir(dir))
  const file = path.join(dir, 'out')
  const fd = fs.openSync(file, 'w')
  const logger = pino({ base: { name: 'c' } }, prettyStream({ fd, isTTY: false }))
  logger.warn({ callId: 'c1\x1b[1A\u202eevil' }, 'call \r FAKE LINE')
  logger.info('second')
  fs.closeSync(fd)
  const text = fs.readFileSync(file, 'utf8')
  assert.doesNotMatch(text, FORBIDDEN)
  const lines = text.trimEnd().split('\n')
  assert.equal(lines.length, 2, text)
  assert.match(lines[0], /WARN \(c\): call \\r FAKE LINE \{"callId":"c1\\x1b\[1A\\u202eevil"\}$/)
  assert.match(lines[1], /INFO \(c\): second$/)
})

test('formatTable cuts a sender\'s long cell to 64 columns with …, but in the last column, so one 1,000-character Call-ID widens no row', () => {
  const columns = [{ key: 'id', title: 'CALL-ID', align: 'left' }, { key: 'n', title: 'N' }, { key: 'line', title: 'LINE', align: 'left' }]
  const long = 'k'.repeat(1000)
  const lines = formatTable(columns, [{ id: long, n: 1, line: long }, { id: '山'.repeat(40), n: 2, line: 'x' }, { id: 'short', n: 3, line: 'y' }]).trimEnd().split('\n')
  assert.equal(lines[1], `${'k'.repeat(63)}…  1  ${long}`, 'cut to 63 columns and …; the last column whole')
  assert.equal(lines[2], `${'山'.repeat(31)}…   2  x`, 'wide characters: 62 columns and …, padded to 64')
  assert.equal(lines[3].indexOf('3'), 66, 'the other rows align on 64 columns')
})
