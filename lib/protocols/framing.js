'use strict'

const InvalidOptionError = require('../../exceptions/invalid-option-error')

// A framer turns a TCP byte stream into messages. `push(chunk)` calls
// `sink.frame(buffer)` per complete message and `sink.drop(reason)` for a
// frame it discards ('oversize' over maxFrameBytes, 'badFrame' for a broken
// octet-count header, 'empty' for a frame declared zero bytes long); the
// connection always survives. `end()` handles the
// bytes left when the peer closes.

const NEWLINE = 0x0a
const CR = 0x0d
const MAX_HEADER_DIGITS = 10

class Framer {
  constructor (maxFrameBytes, sink) {
    this.max = maxFrameBytes
    this.sink = sink
    this.rest = null // the bytes of an unfinished frame parse left
    // Chunks that came after `rest` and cannot finish it (no newline for a
    // line, fewer bytes than a counted frame needs): held as they are, not
    // copied onto `rest` and scanned again each time, which made a frame
    // sent a byte at a time cost the master its size squared (a 64 KiB
    // line in 1-byte reads: half a second of CPU).
    this.more = []
    this.moreLength = 0
    this.wantLine = false // parse stopped for want of a newline
    this.wantBytes = 0 // parse stopped for want of this many bytes from `rest`'s start
    this.skip = 0 // bytes of an oversize counted frame still to discard
    this.discardLine = false // inside an oversize line: drop up to newline
  }

  push (chunk) {
    if (this.rest !== null && this.waits(chunk)) {
      this.more.push(chunk)
      this.moreLength += chunk.length
      return
    }
    let buf = this.rest ? this.restWith(chunk) : chunk
    this.rest = null
    this.wantLine = false
    this.wantBytes = 0
    if (this.skip > 0) {
      const n = Math.min(this.skip, buf.length)
      this.skip -= n
      buf = buf.subarray(n)
    }
    const used = this.parse(buf)
    if (used < buf.length) this.rest = Buffer.from(buf.subarray(used))
    else this.wantLine = false
  }

  // Whether `chunk` can only be held: it cannot finish the frame `rest`
  // begins (a line past maxFrameBytes is parsed, to be dropped as oversize).
  waits (chunk) {
    const length = this.rest.length + this.moreLength + chunk.length
    if (this.wantLine) return length <= this.max && chunk.indexOf(NEWLINE) === -1
    return length < this.wantBytes
  }

  // `rest`, the chunks held after it and `chunk`, in one buffer (chunk may be empty).
  restWith (chunk) {
    const parts = [this.rest, ...this.more, chunk]
    const length = this.rest.length + this.moreLength + chunk.length
    this.more = []
    this.moreLength = 0
    return Buffer.concat(parts, length)
  }

  /**
   * Bytes left at end of stream: a final frame for newline framing, else
   * partial. `cut`: the collector closed the stream, not the sender, so
   * what it had not finished is partial whatever the framing.
   */
  end (cut = false) {
    const rest = this.rest && this.restWith(Buffer.alloc(0))
    this.rest = null
    if (!rest || rest.length === 0 || this.discardLine) return
    if (!cut && this.finalFrameOnEnd(rest)) this.emit(rest)
    else this.sink.drop('partial')
  }

  finalFrameOnEnd () { return false }

  /** Whether bytes of an unfinished frame are held (or being skipped). */
  holding () {
    return this.rest !== null || this.skip > 0 || this.discardLine
  }

  // A frame whose header declared it empty (octet-counted `0 `, a zero
  // length prefix) is a message with nothing in it: counted, not stored.
  // An empty line is only a separator.
  emitCounted (frame) {
    if (frame.length === 0) this.sink.drop('empty')
    else this.emit(frame)
  }

  emit (frame) {
    if (frame.length > this.max) this.sink.drop('oversize')
    else if (frame.length > 0) this.sink.frame(frame)
  }

  /** Newline-terminated frames from `offset`; returns bytes consumed. */
  parseLines (buf, offset) {
    while (offset < buf.length) {
      const nl = buf.indexOf(NEWLINE, offset)
      if (nl === -1) return this.holdLine(buf, offset)
      if (this.discardLine) this.discardLine = false
      else this.emit(trimCR(buf.subarray(offset, nl)))
      offset = nl + 1
      if (this.perFrame) return offset
    }
    return offset
  }

  // A held line may end in the CR of a CRLF still to come: not part of the frame.
  holdLine (buf, offset) {
    const limit = buf[buf.length - 1] === 0x0d ? this.max + 1 : this.max
    if (!this.discardLine && buf.length - offset > limit) {
      this.sink.drop('oversize')
      this.discardLine = true
    }
    if (this.discardLine) return buf.length
    this.wantLine = true
    return offset
  }

  /** One octet-counted frame `LEN SP MSG` at `offset`; returns the new offset or -1 (need more). */
  parseCounted (buf, offset) {
    let i = offset
    let len = 0
    while (i < buf.length && buf[i] >= 0x30 && buf[i] <= 0x39 && i - offset < MAX_HEADER_DIGITS) {
      len = len * 10 + buf[i] - 0x30
      i++
    }
    if (i === buf.length) return this.need(i - offset + 1)
    if (i === offset || buf[i] !== 0x20) return this.badHeader(buf, offset)
    const start = i + 1
    if (len > this.max) return this.skipFrame(buf, start, len)
    if (buf.length - start < len) return this.need(start + len - offset)
    this.emitCounted(buf.subarray(start, start + len))
    return start + len
  }

  // Parse stopped: the frame at its offset needs `bytes` bytes from there. -1.
  need (bytes) {
    this.wantBytes = bytes
    return -1
  }

  skipFrame (buf, start, len) {
    this.sink.drop('oversize')
    const available = buf.length - start
    if (available >= len) return start + len
    this.skip = len - available
    return buf.length
  }

  // A broken header: count it and resynchronise after the next newline.
  badHeader (buf, offset) {
    this.sink.drop('badFrame')
    this.discardLine = true
    return offset
  }

  /** Discards up to and including the next newline; returns the new offset. */
  skipLine (buf, offset) {
    const nl = buf.indexOf(NEWLINE, offset)
    if (nl === -1) return buf.length
    this.discardLine = false
    return nl + 1
  }
}

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

// HEP3 over a stream (HOMER's TCP input, and TLS): each packet carries its
// own total length after the magic "HEP3", header included, so packets are
// simply concatenated. A frame is the whole packet, header included: the
// packet's decoder owns the format. Bytes that do not start a packet are one
// badFrame, skipped up to the next magic.
const HEP3 = Buffer.from('HEP3')

class HepFramer extends Framer {
  parse (buf) {
    let offset = 0
    while (buf.length - offset >= 6) {
      if (buf.readUInt32BE(offset) !== 0x48455033) {
        offset = this.resync(buf, offset)
        continue
      }
      this.resyncing = false
      const len = buf.readUInt16BE(offset + 4)
      if (len < 6) {
        offset = this.resync(buf, offset)
        continue
      }
      if (len > this.max) {
        offset = this.skipFrame(buf, offset + 6, len - 6)
        continue
      }
      if (buf.length - offset < len) {
        this.need(len)
        return offset
      }
      this.emit(buf.subarray(offset, offset + len))
      offset += len
    }
    if (offset < buf.length && !this.resyncing) this.need(6)
    return offset
  }

  // Counts the bytes at `offset` as one badFrame (once per run of garbage)
  // and returns where the next magic starts, or where a magic may still be
  // cut off at the end of what arrived.
  resync (buf, offset) {
    if (!this.resyncing) this.sink.drop('badFrame')
    const next = buf.indexOf(HEP3, offset + 1)
    this.resyncing = next === -1
    return next === -1 ? Math.max(offset + 1, buf.length - 3) : next
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

function trimCR (line) {
  return line.length > 0 && line[line.length - 1] === 0x0d ? line.subarray(0, line.length - 1) : line
}

const NAMED = ['newline', 'octet-counting', 'auto', 'length-prefixed', 'length-prefixed:16', 'length-prefixed:32', 'hep']

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
    case 'hep': return new HepFramer(maxFrameBytes, sink)
  }
  validateFraming(framing)
}

module.exports = { createFramer, validateFraming, FRAMINGS: NAMED }
