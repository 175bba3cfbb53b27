'use strict'

/**
 * How the master splits a received message (a datagram, a TCP frame)
 * before distribution, the `split` option: `none` keeps it whole; `lines`
 * makes each non-empty line (`\n`, an optional `\r` before it) a message of
 * its own, with the sender of the whole, so that each is distributed on its
 * own (StatsD sends several metrics per datagram, each with its own
 * affinity key). The one owner of that split.
 */
const SPLITS = Object.freeze(['none', 'lines'])

const LF = 0x0a
const CR = 0x0d

/** The non-empty lines of `message` as messages sharing its sender and arrival; `data` views its bytes. */
function splitLines (message) {
  const data = message.data
  const parts = []
  let start = 0
  while (start < data.length) {
    let end = data.indexOf(LF, start)
    if (end < 0) end = data.length
    const next = end + 1
    if (end > start && data[end - 1] === CR) end--
    if (end > start) parts.push(message.rinfo ? { data: data.subarray(start, end), rinfo: message.rinfo, receivedAt: message.receivedAt } : { data: data.subarray(start, end), remote: message.remote, receivedAt: message.receivedAt })
    start = next
  }
  return parts
}

/** The splitter of a `split` choice, or null for none. */
function splitterOf (split) {
  return split === 'lines' ? splitLines : null
}

module.exports = { SPLITS, splitterOf, splitLines }
