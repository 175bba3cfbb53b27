'use strict'

// Runs in the master, once per HEP packet (the hep collector's `parts`,
// before its call key): a TCP segment an agent copied whole (heplify
// without -tcpassembly) holds what the sender wrote back to back, on a
// trunk the SIP messages of several calls. Kept whole, it went to the
// worker of its first message's call, and every other call's messages met
// neither their call's memory there (its copies, its message cap, the
// streams its BYE ends) nor the worker their own RTCP went to. Such a
// packet becomes one HEP packet per run of messages of one call, each with
// the whole's chunks and a run's bytes as its payload, so that each call's
// messages go where its Call-ID hashes. Where a message ends, and that
// what follows a segment's leading tail is a message, are read as the
// worker's sip.js reads them (its Content-Length, a start line); the
// correlation id stays with the first message's call (hep-records.js).
// Read from the bytes: a packet that is not SIP over TCP costs a walk of
// its chunks; one with at most one message (the headers end once), a scan
// for a second blank line (two views of its payload, no copy).

const { readChunks, chunks, sipHeaders, blankLineAt } = require('./call-key')
const { startLine, parseSip, TOO_LONG, NOT_TEXT, MAX_HEADER_BYTES } = require('./sip')

const SIP = 1
const IP_TCP = 6
const CHUNK_HEADER = 6
const HEP_HEADER = 6
const TYPE_PAYLOAD = 0x0f
const TYPE_CORRELATION = 0x11
// More runs than this stay one packet, as before (the worker's maxRecords
// bounds its messages): one packet must not fan out into thousands of
// messages in the master. A 64 KB segment of 500-byte messages is 130.
const MAX_PARTS = 256
// What the parts repeat of the whole (its header, its other chunks, a
// payload chunk's header, once a part) may come to this much: a sender's
// 60 KB of other chunks (9,000 six-byte vendor chunks, or one of 50 KB)
// in a packet of 256 runs made 13 MB of parts of one datagram and, chunk
// by chunk, 0.4 s of the master's time. An agent's chunks are a hundred
// bytes or two: 256 runs of them are well under it.
const MAX_REPEATED_BYTES = 65536
// Lines of a leading tail tried as a start line, as sip.js messageAfterTail.
const MAX_TAIL_TRIES = 4
const MAX_START_LINE = 1024
const SIP_VERSION = Buffer.from('SIP/2.0')

/** The HEP packets of `buf[start, end)`'s calls, one per run of one call's messages; null to keep it whole. */
function callPartsOf (buf, start, end) {
  if (!readChunks(buf, start, end) || chunks.protocol !== SIP || chunks.ipProtocol !== IP_TCP || chunks.payloads !== 1) return null
  const { payloadAt, payloadEnd } = chunks
  const first = blankLineAt(buf, payloadAt, payloadEnd)
  if (first === -1 || blankLineAt(buf, first + 4, payloadEnd) === -1) return null
  const maxRuns = Math.min(MAX_PARTS, Math.floor(MAX_REPEATED_BYTES / (end - start - (payloadEnd - payloadAt))))
  if (maxRuns < 2) return null
  const runs = callRuns(buf, payloadAt, payloadEnd, maxRuns)
  if (runs === null || runs.length < 2) return null
  const [correlated, other] = repeatedChunks(buf, start, end)
  return runs.map((run) => hepPart(buf, start, run, run.key === runs[0].key ? correlated : other))
}

/** The runs of messages of one call in the payload `buf[at, end)`, `{ start, end, key }`; null when more than `maxRuns`. */
function callRuns (buf, at, end, maxRuns) {
  let offset = startLineAt(buf, at, end) ? at : afterTail(buf, at, end)
  const runs = []
  while (offset !== -1) {
    const { key, end: messageEnd, ended } = sipHeaders(buf, offset, end, true)
    if (key === -1) break // not a message of a call: stays with the one before (or the whole stays one packet)
    if (!ended && runs.length > 0 && !parsesWhole(buf, offset, end)) break // a segment's cut last message, as the worker reads it
    const last = runs[runs.length - 1]
    if (last && last.key === key) last.end = messageEnd
    else if (runs.push({ start: offset, end: messageEnd, key }) > maxRuns) return null
    offset = messageEnd
    while (offset < end && (buf[offset] === 0x0d || buf[offset] === 0x0a)) offset++ // a stream's keep-alive CRLFs
    if (offset === end || !startLineAt(buf, offset, end)) break
  }
  if (runs.length > 0) runs[runs.length - 1].end = end // the last runs to the payload's end, as in sip.js
  return runs
}

// Whether the worker reads buf[at, end) as a message (sip.js parseSip):
// asked of a last one whose headers do not end, cut at the segment's end,
// which it keeps with the message before unless it has what a message needs.
function parsesWhole (buf, at, end) {
  const sip = parseSip(buf.subarray(at, end))
  return sip !== null && sip !== TOO_LONG && sip !== NOT_TEXT
}

// The first line past a segment's leading tail that starts a message, or
// -1: as sip.js messageAfterTail, at most MAX_TAIL_TRIES lines that end or
// begin as a start line are read as one (the rest are passed over on
// their bytes: a sender's 64 KB of short lines cost no string each).
function afterTail (buf, at, end) {
  let tries = 0
  for (let line = buf.indexOf(0x0a, at) + 1; line > 0 && line < end; line = buf.indexOf(0x0a, line) + 1) {
    const lineEnd = endOfLine(buf, line, end)
    if (!sipVersionAt(buf, line, lineEnd)) continue
    if (startLine(buf.latin1Slice(line, Math.min(lineEnd, line + MAX_START_LINE))) !== null) return line
    if (++tries >= MAX_TAIL_TRIES) return -1
  }
  return -1
}

// Whether a message starts at `at`, its start line read as sip.js parseSip
// reads a message's: UTF-8, the line whole within MAX_HEADER_BYTES. Read as
// latin1, or cut at MAX_START_LINE, a request URI with a UTF-8 à (C3 A0: a
// no-break space in latin1) or of 1,100 bytes was no start line: a first
// message was passed over as a segment's tail, in no part.
function startLineAt (buf, at, end) {
  const lineEnd = endOfLine(buf, at, end)
  return sipVersionAt(buf, at, lineEnd) && startLine(buf.utf8Slice(at, Math.min(lineEnd, at + MAX_HEADER_BYTES))) !== null
}

// Where the line at `at` ends, before its CR.
function endOfLine (buf, at, end) {
  let lineEnd = buf.indexOf(0x0a, at)
  if (lineEnd === -1 || lineEnd > end) lineEnd = end
  return lineEnd > at && buf[lineEnd - 1] === 0x0d ? lineEnd - 1 : lineEnd
}

// Whether buf[at, lineEnd) begins with "SIP/2.0" (a response) or ends with it (a request), any case.
function sipVersionAt (buf, at, lineEnd) {
  return lineEnd - at >= SIP_VERSION.length + 2 && (versionAt(buf, at) || versionAt(buf, lineEnd - SIP_VERSION.length))
}

function versionAt (buf, at) {
  for (let i = 0; i < SIP_VERSION.length; i++) if ((buf[at + i] | 0x20) !== (SIP_VERSION[i] | 0x20)) return false
  return true
}

// What each part repeats of the packet `buf[start, end)`: its chunks but
// the payload, with the correlation id (for the first message's call) and
// without it, as byte ranges merged where adjacent (one copy for an
// agent's run of chunks), and their size with the packet's header.
function repeatedChunks (buf, start, end) {
  const correlated = { ranges: [], size: HEP_HEADER }
  const other = { ranges: [], size: HEP_HEADER }
  for (let at = start + HEP_HEADER; at + CHUNK_HEADER <= end;) {
    const length = buf.readUInt16BE(at + 4)
    const type = buf.readUInt16BE(at) === 0 ? buf.readUInt16BE(at + 2) : -1
    if (type !== TYPE_PAYLOAD) keepRange(correlated, at, length)
    if (type !== TYPE_PAYLOAD && type !== TYPE_CORRELATION) keepRange(other, at, length)
    at += length
  }
  return [correlated, other]
}

function keepRange (into, at, length) {
  const ranges = into.ranges
  if (ranges.length > 0 && ranges[ranges.length - 1] === at) ranges[ranges.length - 1] = at + length
  else ranges.push(at, at + length)
  into.size += length
}

// A HEP packet of `repeated`'s chunks of `buf` (its header's magic at
// `start`) and `run`'s bytes as its payload.
function hepPart (buf, start, run, repeated) {
  const payloadLength = run.end - run.start
  const part = Buffer.allocUnsafe(repeated.size + CHUNK_HEADER + payloadLength)
  buf.copy(part, 0, start, start + 4) // HEP3
  part.writeUInt16BE(part.length, 4)
  let out = HEP_HEADER
  const ranges = repeated.ranges
  for (let i = 0; i < ranges.length; i += 2) out += buf.copy(part, out, ranges[i], ranges[i + 1])
  part.writeUInt16BE(0, out)
  part.writeUInt16BE(TYPE_PAYLOAD, out + 2)
  part.writeUInt16BE(CHUNK_HEADER + payloadLength, out + 4)
  buf.copy(part, out + CHUNK_HEADER, run.start, run.end)
  return part
}

module.exports = { callPartsOf }
