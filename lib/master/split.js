'use strict'

const InvalidOptionError = require('../../exceptions/invalid-option-error')

/**
 * How the master splits a received message (a datagram, a TCP frame)
 * before distribution, each part distributed on its own (its own key) and
 * counted as a message: the `split` option, `none` or `lines` (each
 * line, ended by `\n` with an optional `\r` before it, that holds more
 * than spaces, tabs and `\r`, as it is: StatsD sends
 * several metrics per datagram, each with its own affinity key), or a
 * balancer's `parts(buf, start, end)` (a collector definition's `parts`:
 * HEP's TCP segments holding several calls' SIP messages). A splitter
 * reads `buf[start, end)` in place and gives null to keep the message
 * whole, else its parts' bytes. The one owner of that split.
 */
const SPLITS = Object.freeze(['none', 'lines'])

const LF = 0x0a
const CR = 0x0d

/** The lines of buf[start, end) that are not blank, views of their bytes. */
function lineParts (buf, start, end) {
  const parts = []
  while (start < end) {
    let lineEnd = buf.indexOf(LF, start)
    if (lineEnd < 0 || lineEnd > end) lineEnd = end
    const next = lineEnd + 1
    if (lineEnd > start && buf[lineEnd - 1] === CR) lineEnd--
    if (!blank(buf, start, lineEnd)) parts.push(buf.subarray(start, lineEnd))
    start = next
  }
  return parts
}

// Whether buf[start, end) holds nothing but spaces, tabs and CRs (or nothing): no message.
function blank (buf, start, end) {
  for (let i = start; i < end; i++) if (buf[i] !== 0x20 && buf[i] !== 0x09 && buf[i] !== CR) return false
  return true
}

/** The messages of `message`'s parts (`datas`, views of its bytes), each sharing its sender and arrival. */
function partMessages (message, datas) {
  return datas.map((data) => message.rinfo ? { data, rinfo: message.rinfo, receivedAt: message.receivedAt } : { data, remote: message.remote, receivedAt: message.receivedAt })
}

/** The lines of `message` that are not blank, as messages sharing its sender and arrival; `data` views its bytes. */
function splitLines (message) {
  return partMessages(message, lineParts(message.data, 0, message.data.length))
}

/**
 * The splitter of a `split` choice, or of a balancer's `parts()` (null
 * when it has none); null for neither. Both at once are refused: a
 * balancer that splits its messages itself has already said what a message is.
 */
function splitterOf (split, parts) {
  if (split === 'lines' && parts) throw new InvalidOptionError('split', split, 'cannot be combined with a collector that splits its messages itself (a parts() of its own)')
  if (split === 'lines') return lineParts
  return parts || null
}

module.exports = { SPLITS, splitterOf, splitLines, partMessages }
