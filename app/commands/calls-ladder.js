'use strict'

// A call's SIP messages as the hep collector stored them (`sip_messages`,
// collectors/hep/sip-messages.js), read by `collector calls --call-id` (runs
// in the CLI): in capture order, printed as a ladder, one line a message
// (its time from the first, from → to, its first line), every sender's
// string through terminal-text.js.

const { printable } = require('../terminal-text')
const { formatTable } = require('./common')
const { SIP_MESSAGES, rawText } = require('../../collectors/hep/sip-messages')
const { CALL_LOGS } = require('../../collectors/hep/call-logs')

// What one ladder shows at most: a call past it is a loop or an attack,
// and its first messages say what happened.
const MAX_SHOWN = 1000

/**
 * The SIP messages of `callId`: `{ callId, stored, messages: [{ at, src,
 * dst, transport, firstLine, method?, status?, cseq, bytes, truncated?,
 * raw }], logs }`, by capture time then arrival; at most MAX_SHOWN of
 * `stored`; `raw` as text, or as a Buffer with `bytes`; `logs`, the
 * call's documents in `logsCollection` (call_logs) when given.
 * @param {import('mongodb').Collection} collection
 */
async function ladderOf (collection, callId, logsCollection = null, { bytes = false } = {}) {
  const stored = await collection.countDocuments({ callId })
  const messages = await inOrder(collection, callId, bytes)
  const logs = logsCollection ? await inOrder(logsCollection, callId) : []
  return { callId, stored, messages, logs }
}

// A call's documents by capture time then arrival, without what the call
// says already; a message's raw text as text, or as its bytes (`bytes`).
async function inOrder (collection, callId, bytes = false) {
  const docs = await collection.find({ callId }, { sort: { at: 1, _id: 1 }, limit: MAX_SHOWN }).toArray()
  const raw = bytes ? (value) => Buffer.from(value.buffer || value) : rawText
  return docs.map(({ _id, callId: _, receivedAt, ...doc }) => doc.raw === undefined ? doc : { ...doc, raw: raw(doc.raw) })
}

/** The ladder as a table: `+TIME  FROM -> TO  FIRST LINE`; then the agents' logs and reports of the call. */
function printLadder ({ callId, stored, messages, logs = [] }, out) {
  printMessages({ callId, stored, messages }, out)
  if (logs.length === 0) return
  out.write(`\nWhat agents logged or reported of ${printable(callId)} (${logs.length}):\n`)
  out.write(formatTable([
    { key: 'time', title: 'TIME (UTC)', align: 'left' },
    { key: 'kind', title: 'KIND', align: 'left' },
    { key: 'node', title: 'AGENT', align: 'left' },
    { key: 'text', title: 'TEXT', align: 'left' }
  ], logs.map((l) => ({ time: new Date(l.at).toISOString().slice(11, 23), kind: l.kind, node: l.node || l.src, text: l.text.length > 200 ? `${l.text.slice(0, 199)}…` : l.text }))))
}

function printMessages ({ callId, stored, messages }, out) {
  out.write(`\nSIP messages of ${printable(callId)} (${stored} stored${stored > messages.length ? `, the first ${messages.length} shown` : ''}):\n`)
  if (messages.length === 0) return
  const t0 = new Date(messages[0].at).getTime()
  const rows = messages.map((m) => ({
    time: `+${((new Date(m.at).getTime() - t0) / 1000).toFixed(3)}s`,
    from: m.src,
    arrow: '->',
    to: m.dst,
    line: m.firstLine // formatTable escapes every cell
  }))
  out.write(formatTable([
    { key: 'time', title: 'TIME' },
    { key: 'from', title: 'FROM', align: 'left' },
    { key: 'arrow', title: '', align: 'left' },
    { key: 'to', title: 'TO', align: 'left' },
    { key: 'line', title: 'MESSAGE', align: 'left' }
  ], rows))
}

module.exports = { ladderOf, printLadder, SIP_MESSAGES, CALL_LOGS, MAX_SHOWN }
