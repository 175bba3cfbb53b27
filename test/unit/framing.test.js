'use strict'
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { createFramer, validateFraming } = require('../../lib/protocols/framing')

// Feeds `chunks` to a framer and returns what it framed and dropped.
function frame (framing, chunks, { max = 100, end = true } = {}) {
  const out = { frames: [], drops: [] }
  const framer = createFramer(framing, max, {
    frame: (buf) => out.frames.push(buf.toString('latin1')),
    drop: (reason) => out.drops.push(reason)
  })
  for (const chunk of chunks) framer.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, 'latin1'))
  if (end) framer.end()
  return out
}

// The same bytes one byte at a time, all at once, and in chunks of 3.
function splits (text) {
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text, 'latin1')
  const ones = [...bytes].map((b) => Buffer.from([b]))
  const threes = []
  for (let i = 0; i < bytes.length; i += 3) threes.push(bytes.subarray(i, i + 3))
  return { whole: [bytes], ones, threes }
}

function assertEverySplit (framing, text, expected, options) {
  for (const [name, chunks] of Object.entries(splits(text))) {
    assert.deepEqual(frame(framing, chunks, options), expected, `${framing}, ${name}`)
  }
}

function lengthPrefixed (bytes, frames) {
  return Buffer.concat(frames.map((f) => {
    const head = Buffer.alloc(bytes)
    if (bytes === 2) head.writeUInt16BE(f.length)
    else head.writeUInt32BE(f.length)
    return Buffer.concat([head, Buffer.from(f, 'latin1')])
  }))
}

test('newline: LF and CRLF lines, the last unterminated line delivered on end', () => {
  assertEverySplit('newline', 'a\nbb\r\nccc\n\ndd', { frames: ['a', 'bb', 'ccc', 'dd'], drops: [] })
})

test('newline: an oversize line is dropped once and the next line arrives', () => {
  const long = 'x'.repeat(150)
  assertEverySplit('newline', `ok1\n${long}\nok2\n`, { frames: ['ok1', 'ok2'], drops: ['oversize'] })
})

test('newline: a line of exactly maxFrameBytes fits, with LF or CRLF', () => {
  const line = 'y'.repeat(100)
  assertEverySplit('newline', `${line}\n${line}\r\nz\n`, { frames: [line, line, 'z'], drops: [] })
})

test('octet-counting: frames, split anywhere', () => {
  assertEverySplit('octet-counting', '5 hello3 abc11 hello world', { frames: ['hello', 'abc', 'hello world'], drops: [] })
})

test('octet-counting: oversize frame skipped by its count, the next arrives', () => {
  const long = 'z'.repeat(150)
  assertEverySplit('octet-counting', `2 ok150 ${long}3 yes`, { frames: ['ok', 'yes'], drops: ['oversize'] })
})

test('octet-counting: a bad header is one badFrame, resynchronised after the next newline', () => {
  assertEverySplit('octet-counting', '2 okGARBAGE here\n3 yes', { frames: ['ok', 'yes'], drops: ['badFrame'] })
  assertEverySplit('octet-counting', '12345678901 x\n2 ok', { frames: ['ok'], drops: ['badFrame'] })
})

test('octet-counting: an LF or CRLF after a frame (some senders add one) separates, it is no bad header', () => {
  assertEverySplit('octet-counting', '2 ok\n3 yes\r\n4 four\n', { frames: ['ok', 'yes', 'four'], drops: [] })
})

test('auto: a line that starts with digits and no SP after them (no PRI: a date) is a line, not a bad octet count', () => {
  assertEverySplit('auto', '2026-06-15 10:00:00 host app: x\n3 abc<1>y\n', { frames: ['2026-06-15 10:00:00 host app: x', 'abc', '<1>y'], drops: [] })
  assertEverySplit('auto', '42\n', { frames: ['42'], drops: [] })
})

test('octet-counting: an unfinished frame at end of stream is partial', () => {
  assertEverySplit('octet-counting', '2 ok10 abc', { frames: ['ok'], drops: ['partial'] })
})

test('auto: octet-counted and newline frames mixed per frame', () => {
  assertEverySplit('auto', '<1>a\n5 <2>bc<3>d\r\n3 <4><5>last', { frames: ['<1>a', '<2>bc', '<3>d', '<4>', '<5>last'], drops: [] })
})

test('auto: oversize of either kind dropped, stream continues', () => {
  const long = 'q'.repeat(150)
  assertEverySplit('auto', `<${long}\n150 ${long}<ok>\n`, { frames: ['<ok>'], drops: ['oversize', 'oversize'] })
})

test('length-prefixed 16 and 32 bit, split anywhere; oversize skipped', () => {
  const frames = ['one', '', 'three', 'x'.repeat(100)]
  assertEverySplit('length-prefixed:16', lengthPrefixed(2, frames), { frames: ['one', 'three', 'x'.repeat(100)], drops: ['empty'] })
  assertEverySplit('length-prefixed', lengthPrefixed(4, frames), { frames: ['one', 'three', 'x'.repeat(100)], drops: ['empty'] })
  assertEverySplit('length-prefixed:32', lengthPrefixed(4, ['a', 'b'.repeat(101), 'c']), { frames: ['a', 'c'], drops: ['oversize'] })
  assertEverySplit('length-prefixed:16', lengthPrefixed(2, ['a', 'b'.repeat(300), 'c']), { frames: ['a', 'c'], drops: ['oversize'] })
})

test('length-prefixed: a truncated frame at end of stream is partial', () => {
  assert.deepEqual(frame('length-prefixed:16', [lengthPrefixed(2, ['abc']).subarray(0, 4)]), { frames: [], drops: ['partial'] })
})

test('a user framing function: (buffer) => { frame, consumed } | null', () => {
  // '|'-terminated frames.
  const pipe = (buf) => {
    const i = buf.indexOf(0x7c)
    return i === -1 ? null : { frame: buf.subarray(0, i), consumed: i + 1 }
  }
  assertEverySplit(pipe, 'a|bb|ccc|', { frames: ['a', 'bb', 'ccc'], drops: [] })
  // Bytes held waiting for a frame are bounded by maxFrameBytes.
  const out = frame(pipe, ['x'.repeat(60), 'x'.repeat(60)], { end: false })
  assert.deepEqual(out, { frames: [], drops: ['oversize'] })
})

test('validateFraming names the bad value', () => {
  assert.throws(() => validateFraming('crlf'), { code: 'ERR_INVALID_OPTION', message: /"crlf"/ })
  assert.doesNotThrow(() => validateFraming('auto'))
  assert.doesNotThrow(() => validateFraming(() => null))
})

test('a user framing function that throws costs its buffered bytes (badFrame), not the process', () => {
  const picky = (buf) => {
    if (buf[0] === 0x21) throw new Error('no bangs')
    const i = buf.indexOf(0x7c)
    return i === -1 ? null : { frame: buf.subarray(0, i), consumed: i + 1 }
  }
  assert.deepEqual(frame(picky, ['a|', '!oops|', 'b|']), { frames: ['a', 'b'], drops: ['badFrame'] })
})

test('a frame declared zero bytes long is counted as empty; an empty line is only a separator', () => {
  assertEverySplit('octet-counting', '3 one0 3 two', { frames: ['one', 'two'], drops: ['empty'] })
  assertEverySplit('auto', '0 <1>a\n\n0 ', { frames: ['<1>a'], drops: ['empty', 'empty'] })
  assertEverySplit('newline', 'a\n\n\r\nb\n', { frames: ['a', 'b'], drops: [] })
})

test('holding() tells whether bytes of an unfinished frame are held', () => {
  for (const [framing, partial, rest] of [['newline', 'abc', 'def\n'], ['octet-counting', '5 ab', 'cde'], ['length-prefixed:16', '\u0000\u0003a', 'bc']]) {
    const framer = createFramer(framing, 100, { frame: () => {}, drop: () => {} })
    assert.equal(framer.holding(), false, framing)
    framer.push(Buffer.from(partial, 'latin1'))
    assert.equal(framer.holding(), true, `${framing}: after a partial frame`)
    framer.push(Buffer.from(rest, 'latin1'))
    assert.equal(framer.holding(), false, `${framing}: after the frame completed`)
  }
  // Skipping the rest of an oversize counted frame is holding too.
  const framer = createFramer('octet-counting', 4, { frame: () => {}, drop: () => {} })
  framer.push(Buffer.from('10 abc'))
  assert.equal(framer.holding(), true)
})

// HEP3 packets as the framer sees them: magic, total length, any body.
function hepPacket (body) {
  const head = Buffer.alloc(6)
  head.write('HEP3')
  head.writeUInt16BE(6 + body.length, 4)
  return Buffer.concat([head, Buffer.from(body, 'latin1')])
}

test('hep: packets framed by their own length, split anywhere; garbage is one badFrame up to the next magic; oversize skipped', () => {
  const a = hepPacket('first')
  const b = hepPacket('second packet')
  const text = Buffer.concat([a, Buffer.from('junk!'), b, hepPacket('x'.repeat(200)), a]).toString('latin1')
  assertEverySplit('hep', text, { frames: [a, b, a].map((p) => p.toString('latin1')), drops: ['badFrame', 'oversize'] })
  // A length below the header's own is broken: counted, and the stream resynchronises.
  const broken = Buffer.from('HEP3\u0000\u0002', 'latin1')
  assertEverySplit('hep', Buffer.concat([broken, b]).toString('latin1'), { frames: [b.toString('latin1')], drops: ['badFrame'] })
  assert.deepEqual(frame('hep', [a.subarray(0, 8)]), { frames: [], drops: ['partial'] })
})

// IPFIX messages as a stream carries them (RFC 7011 §10.4): version 10,
// total length, export time, sequence, domain, then sets.
function ipfixMessage (sets, sequence = 1) {
  const head = Buffer.alloc(16)
  head.writeUInt16BE(10, 0)
  head.writeUInt16BE(16 + sets.length, 2)
  head.writeUInt32BE(sequence, 8)
  return Buffer.concat([head, Buffer.from(sets, 'latin1')])
}

test('ipfix: messages framed by their own length, split anywhere; a v9 header or garbage is one badFrame up to the next version 10; a length under the header broken; oversize skipped', () => {
  const a = ipfixMessage('\u0001\u0000\u0000\u0008abcd')
  const b = ipfixMessage('', 2)
  const v9 = Buffer.from('\u0000\u0009\u0000\u0001junk', 'latin1') // NetFlow v9 has no stream transport
  const text = Buffer.concat([a, v9, b, ipfixMessage('x'.repeat(200), 3), a]).toString('latin1')
  assertEverySplit('ipfix', text, { frames: [a, b, a].map((m) => m.toString('latin1')), drops: ['badFrame', 'oversize'] })
  const broken = Buffer.from('\u0000\u000a\u0000\u0008', 'latin1')
  assertEverySplit('ipfix', Buffer.concat([broken, b]).toString('latin1'), { frames: [b.toString('latin1')], drops: ['badFrame'] })
  assert.deepEqual(frame('ipfix', [a.subarray(0, 10)]), { frames: [], drops: ['partial'] })
})

// A frame delivered a byte at a time was copied and scanned whole at every
// byte (Buffer.concat of what was held and the new byte): its size squared
// in the master's CPU, half a second for one 64 KiB line. Counted here in
// bytes copied, not time: each byte is copied a bounded number of times.
test('a frame sent a byte at a time is copied in proportion to its size, not its size squared, for every framing', () => {
  const size = 16384
  const line = Buffer.concat([Buffer.from('<13>'), Buffer.alloc(size - 5, 0x41), Buffer.from('\n')])
  const counted = Buffer.concat([Buffer.from(`${size} `), Buffer.alloc(size, 0x41)])
  const hep = Buffer.alloc(size, 0x41)
  hep.write('HEP3')
  hep.writeUInt16BE(size, 4)
  const streams = { newline: line, auto: line, 'octet-counting': counted, 'length-prefixed': lengthPrefixed(4, ['x'.repeat(size)]), 'length-prefixed:16': lengthPrefixed(2, ['x'.repeat(size)]), hep }
  const concat = Buffer.concat
  let copied = 0
  Buffer.concat = (list, length) => {
    const out = concat(list, length)
    copied += out.length
    return out
  }
  try {
    for (const [framing, bytes] of Object.entries(streams)) {
      copied = 0
      const { frames, drops } = frame(framing, [...bytes].map((b) => Buffer.from([b])), { max: size + 10 })
      assert.deepEqual([frames.length, drops], [1, []], framing)
      assert.ok(copied <= 4 * bytes.length, `${framing}: ${copied} bytes copied for a frame of ${bytes.length}`)
    }
  } finally {
    Buffer.concat = concat
  }
})

test('chunks held while a frame is unfinished change nothing of what is framed: random streams in random splits, every framing', () => {
  let seed = 99
  const rnd = (n) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n }
  const pieces = ['<13>a\n', '<13>bb\r\n', '5 <1>ab', '0 ', '12 ', '\n', '\r', 'x', '3 abc', '99 ', '9999999999 ', '<13>' + 'y'.repeat(40), '\r\n', '007 <1>abc', ' ', '1', '\0\0\0\x05hello', '\0\x03abc', 'HEP3\0\x08ab']
  for (let k = 0; k < 3000; k++) {
    let text = ''
    for (let i = 1 + rnd(8); i > 0; i--) text += pieces[rnd(pieces.length)]
    const bytes = Buffer.from(text, 'latin1')
    const max = 16 + rnd(40)
    for (const framing of ['auto', 'newline', 'octet-counting', 'length-prefixed', 'length-prefixed:16', 'hep']) {
      const whole = frame(framing, [bytes], { max })
      const cuts = []
      let from = 0
      for (let i = 1; i <= bytes.length; i++) if (i === bytes.length || rnd(3) === 0) { cuts.push(bytes.subarray(from, i)); from = i }
      assert.deepEqual(frame(framing, cuts, { max }), whole, `${framing} ${JSON.stringify(text)} max ${max}`)
      assert.deepEqual(frame(framing, splits(bytes).ones, { max }), whole, `${framing} ${JSON.stringify(text)} max ${max}, byte by byte`)
    }
  }
})

// Held as a list of chunks, a line sent a byte at a time cost ~200 bytes of
// heap a byte: 14 MB a connection for a 64 KiB line.
test('an unfinished line sent a byte at a time is held in one buffer at most twice its size', () => {
  const framer = createFramer('auto', 65536, { frame: () => {}, drop: () => {} })
  for (let i = 0; i < 40000; i++) framer.push(Buffer.from([0x41]))
  assert.equal(framer.rest.length, 40000)
  assert.ok(framer.rest.buffer.byteLength <= 2 * 40000, `${framer.rest.buffer.byteLength} bytes held`)
  assert.equal(Object.values(framer).filter(Array.isArray).length, 0, 'no list of chunks')
})
