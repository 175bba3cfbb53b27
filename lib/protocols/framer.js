'use strict'

// The base of every framer (framing.js): what a TCP connection's bytes
// left unfinished, held without being copied again at every read, and
// the pieces the line and octet-counted framings share.

const NEWLINE = 0x0a
const MAX_HEADER_DIGITS = 10

class Framer {
  constructor (maxFrameBytes, sink) {
    this.max = maxFrameBytes
    this.sink = sink
    this.rest = null // the bytes of an unfinished frame parse left, and those held after them
    // Chunks that come after `rest` and cannot finish it (no newline for a
    // line, fewer bytes than a counted frame needs) are appended to it in
    // place, in a buffer grown by doubling (`room`), not concatenated and
    // scanned again each time, which made a frame sent a byte at a time
    // cost the master its size squared (a 64 KiB line in 1-byte reads: half
    // a second of CPU); nor kept as a list of chunks, 200 bytes of heap each.
    this.wantLine = false // parse stopped for want of a newline
    this.wantBytes = 0 // parse stopped for want of this many bytes from `rest`'s start
    this.skip = 0 // bytes of an oversize counted frame still to discard
    this.discardLine = false // inside an oversize line: drop up to newline
  }

  get rest () { return this.held }

  // Whatever sets `rest` (parse's leftover, a copy of its own) starts a new room.
  set rest (bytes) {
    this.held = bytes
    this.room = bytes
  }

  push (chunk) {
    if (this.rest !== null && this.waits(chunk)) {
      this.hold(chunk)
      return
    }
    let buf = chunk
    if (this.rest !== null) {
      this.hold(chunk)
      buf = this.rest
    }
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
  }

  // Whether `chunk` can only be held: it cannot finish the frame `rest`
  // begins (a line past maxFrameBytes is parsed, to be dropped as oversize).
  waits (chunk) {
    const length = this.rest.length + chunk.length
    if (this.wantLine) return length <= this.max && chunk.indexOf(NEWLINE) === -1
    return length < this.wantBytes
  }

  // Appends `chunk` to `rest`, in the room after it or in a room twice as large.
  hold (chunk) {
    const length = this.held.length + chunk.length
    if (length > this.room.length) {
      const room = Buffer.allocUnsafeSlow(Math.max(length, 2 * this.room.length))
      this.held.copy(room, 0)
      this.room = room
    }
    chunk.copy(this.room, this.held.length)
    this.held = this.room.subarray(0, length)
  }

  /**
   * Bytes left at end of stream: a final frame for newline framing, else
   * partial. `cut`: the collector closed the stream, not the sender, so
   * what it had not finished is partial whatever the framing.
   */
  end (cut = false) {
    const rest = this.rest
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

function trimCR (line) {
  return line.length > 0 && line[line.length - 1] === 0x0d ? line.subarray(0, line.length - 1) : line
}

module.exports = { Framer, NEWLINE, MAX_HEADER_DIGITS }
