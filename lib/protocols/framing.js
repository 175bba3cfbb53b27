'use strict'

const InvalidOptionError = require('../../exceptions/invalid-option-error')
const { Framer, NEWLINE, MAX_HEADER_DIGITS } = require('./framer')

// A framer turns a TCP byte stream into messages. `push(chunk)` calls
// `sink.frame(buffer)` per complete message and `sink.drop(reason)` for a
// frame it discards ('oversize' over maxFrameBytes, 'badFrame' for a broken
// octet-count header, 'empty' for a frame declared zero bytes long); the
// connection always survives. `end()` handles the
// bytes left when the peer closes.

const CR = 0x0d

class NewlineFramer extends Framer {
  parse (buf) { return this.parseLines(buf, 0) }
  finalFrameOnEnd () { return true }
}

class OctetCountingFramer extends Framer {
  parse (buf) {
    let offset = 0
    while (offset < buf.length) {
      if (this.discardLine) {
        offset = this.skipLine(buf, offset)
        continue
      }
      // An LF (or CRLF) after a frame, which some senders add: a separator, not a bad header.
      if (buf[offset] === NEWLINE) {
        offset++
        continue
      }
      if (buf[offset] === CR && offset + 1 === buf.length) {
        this.need(2)
        break
      }
      if (buf[offset] === CR && buf[offset + 1] === NEWLINE) {
        offset += 2
        continue
      }
      const next = this.parseCounted(buf, offset)
      if (next === -1) break
      offset = next
    }
    return offset
  }
}

// RFC 6587 §3.4: a frame starting with a digit is octet-counted, anything
// else (normally '<') is newline-terminated. Decided per frame, so a sender
// may even mix them.
class AutoFramer extends Framer {
  constructor (max, sink) {
    super(max, sink)
    this.perFrame = true
  }

  parse (buf) {
    let offset = 0
    while (offset < buf.length) {
      if (this.discardLine) {
        offset = this.skipLine(buf, offset)
        continue
      }
      const counted = countedHeader(buf, offset)
      if (counted === undefined) {
        this.need(buf.length - offset + 1)
        break
      }
      const next = counted ? this.parseCounted(buf, offset) : this.parseLines(buf, offset)
      if (next === -1 || (next === offset && !this.discardLine)) break
      offset = next
    }
    return offset
  }

  finalFrameOnEnd (rest) { return countedHeader(rest, 0) === false }
}

// Auto framing's choice for the frame at `offset`: true when digits and a
// SP begin it (an octet count), false for anything else, a line (digits
// followed by anything but SP too: a sender without PRI, '2026-06-15 …',
// stored raw as over UDP, not dropped as a bad header), undefined while
// only digits have arrived.
function countedHeader (buf, offset) {
  let i = offset
  while (i < buf.length && i - offset < MAX_HEADER_DIGITS && buf[i] >= 0x30 && buf[i] <= 0x39) i++
  if (i === offset) return false
  if (i === buf.length) return undefined
  return buf[i] === 0x20
}

class LengthPrefixedFramer extends Framer {
  constructor (max, sink, bytes) {
    super(max, sink)
    this.bytes = bytes
  }

  parse (buf) {
    let offset = 0
    while (buf.length - offset >= this.bytes) {
      const len = this.bytes === 2 ? buf.readUInt16BE(offset) : buf.readUInt32BE(offset)
      const start = offset + this.bytes
      if (len > this.max) {
        offset = this.skipFrame(buf, start, len)
        continue
      }
      if (buf.length - start < len) {
        this.need(this.bytes + len)
        return offset
      }
      this.emitCounted(buf.subarray(start, start + len))
      offset = start + len
    }
    if (offset < buf.length) this.need(this.bytes)
    return offset
  }
}

// Messages that carry their own total length in their header, after a
// magic number, simply concatenated on a stream: HEP3 (HOMER's TCP input,
// and TLS: "HEP3", then the length, header included) and IPFIX (RFC 7011
// §10.4: version 10, then the message's length; NetFlow v5 and v9 have no
// stream transport). A frame is the whole message, header included: the
// message's decoder owns the format. Bytes that do not start a message are
// one badFrame, skipped up to the next magic.
const HEADERS = Object.freeze({
  hep: { magic: Buffer.from('HEP3'), minLength: 6 },
  ipfix: { magic: Buffer.from([0x00, 0x0a]), minLength: 16 }
})

class HeaderLengthFramer extends Framer {
  constructor (max, sink, { magic, minLength }) {
    super(max, sink)
    this.magic = magic
    this.minLength = minLength
    this.header = magic.length + 2 // the magic, then the length (16 bits)
  }

  parse (buf) {
    let offset = 0
    while (buf.length - offset >= this.header) {
      if (buf.compare(this.magic, 0, this.magic.length, offset, offset + this.magic.length) !== 0) {
        offset = this.resync(buf, offset)
        continue
      }
      this.resyncing = false
      const len = buf.readUInt16BE(offset + this.magic.length)
      if (len < this.minLength) {
        offset = this.resync(buf, offset)
        continue
      }
      if (len > this.max) {
        offset = this.skipFrame(buf, offset + this.header, len - this.header)
        continue
      }
      if (buf.length - offset < len) {
        this.need(len)
        return offset
      }
      this.emit(buf.subarray(offset, offset + len))
      offset += len
    }
    if (offset < buf.length && !this.resyncing) this.need(this.header)
    return offset
  }

  // Counts the bytes at `offset` as one badFrame (once per run of garbage)
  // and returns where the next magic starts, or where a magic may still be
  // cut off at the end of what arrived.
  resync (buf, offset) {
    if (!this.resyncing) this.sink.drop('badFrame')
    const next = buf.indexOf(this.magic, offset + 1)
    this.resyncing = next === -1
    return next === -1 ? Math.max(offset + 1, buf.length - (this.magic.length - 1)) : next
  }

  holding () {
    return super.holding() && !this.resyncing
  }
}

// A user function `(buffer) => ({ frame, consumed }) | null` (null: need more bytes).
class FunctionFramer extends Framer {
  constructor (max, sink, fn) {
    super(max, sink)
    this.fn = fn
  }

  parse (buf) {
    let offset = 0
    while (offset < buf.length) {
      const result = this.call(buf.subarray(offset))
      if (result === THREW) return buf.length
      if (!result || !(result.consumed > 0)) break
      offset += result.consumed
      if (result.frame) this.emitCounted(result.frame)
    }
    return offset
  }

  // A throwing user function must not take the process down: the bytes it
  // choked on are dropped as one badFrame and the connection goes on.
  call (bytes) {
    try {
      return this.fn(bytes)
    } catch {
      this.sink.drop('badFrame')
      return THREW
    }
  }

  holdLimit (rest) {
    if (rest.length > this.max) {
      this.sink.drop('oversize')
      return null
    }
    return rest
  }

  push (chunk) {
    super.push(chunk) // it holds no chunk apart: a user function's need is unknown (wantBytes stays 0)
    if (this.rest) this.rest = this.holdLimit(this.rest)
  }
}

const THREW = Symbol('threw')

const NAMED = ['newline', 'octet-counting', 'auto', 'length-prefixed', 'length-prefixed:16', 'length-prefixed:32', 'hep', 'ipfix']

/** Checks a framing option early, with the bad value in the error. */
function validateFraming (framing) {
  if (typeof framing === 'function' || NAMED.includes(framing)) return
  throw new InvalidOptionError('framing', framing, `must be one of ${NAMED.join(', ')} or a function`)
}

/** A framer for one connection. */
function createFramer (framing, maxFrameBytes, sink) {
  if (typeof framing === 'function') return new FunctionFramer(maxFrameBytes, sink, framing)
  switch (framing) {
    case 'newline': return new NewlineFramer(maxFrameBytes, sink)
    case 'octet-counting': return new OctetCountingFramer(maxFrameBytes, sink)
    case 'auto': return new AutoFramer(maxFrameBytes, sink)
    case 'length-prefixed:16': return new LengthPrefixedFramer(maxFrameBytes, sink, 2)
    case 'length-prefixed':
    case 'length-prefixed:32': return new LengthPrefixedFramer(maxFrameBytes, sink, 4)
    case 'hep':
    case 'ipfix': return new HeaderLengthFramer(maxFrameBytes, sink, HEADERS[framing])
  }
  validateFraming(framing)
}

module.exports = { createFramer, validateFraming, FRAMINGS: NAMED }
