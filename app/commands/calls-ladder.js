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
const LINE_SHOWN = 160 // characters of a message's first line a terminal row shows (a sender's 6,000-character reason made 1,071-column rows)
const LOG_SHOWN = 200 // of a log line

/** `text` at most `max` characters, its end replaced by … when cut. */
function shortened (text, max) {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

/**
 * The SIP messages of `callId` and of the legs bridged to it (`legs`, its
 * conversation: legsOf): `{ callId, legs, stored, messages: [{ at, src,
 * dst, transport, firstLine, method?, status?, cseq, bytes, truncated?,
 * raw, rawBytes (of it stored), leg?, atMicros? }], logs }`, by capture time (to the microsecond) then arrival; at most MAX_SHOWN
 * of `stored`; `raw` as text, or as a Buffer with `bytes`; `leg`, the
 * message's Call-ID when the conversation has more than one; `logs`, their
 * documents in `logsCollection` (call_logs) when given.
 * @param {import('mongodb').Collection} collection
 * @param {string} callId
 * @param {import('mongodb').Collection|null} [logsCollection]
 * @param {{ bytes?: boolean, legs?: string[] }} [options] legs: the conversation's Call-IDs (default: the call alone)
 */
async function ladderOf (collection, callId, logsCollection = null, { bytes = false, legs = [callId] } = {}) {
  const filter = legs.length === 1 ? { callId: legs[0] } : { callId: { $in: legs } }
  const stored = await collection.countDocuments(filter)
  const messages = await inOrder(collection, filter, bytes, legs.length > 1)
  const logs = logsCollection ? await inOrder(logsCollection, filter, false, legs.length > 1) : []
  return { callId, legs, stored, messages, logs }
}

/**
 * The Call-IDs of the conversation `callId` is a leg of: the call a B2BUA
 * bridged (its `linkedId`, else itself) and every call linked to that one,
 * the earliest INVITE first. One hop, as the correlation headers say it.
 * @param {import('mongodb').Collection} calls
 */
async function legsOf (calls, callId) {
  const doc = await calls.findOne({ callId }, { projection: { linkedId: 1 } })
  const root = (doc && doc.linkedId) || callId
  const docs = await calls.find({ $or: [{ callId: root }, { linkedId: root }] }, { projection: { callId: 1, invitedAt: 1 }, limit: 64 }).toArray()
  const legs = docs.sort((a, b) => (a.invitedAt || 0) - (b.invitedAt || 0)).map((d) => d.callId)
  if (!legs.includes(callId)) legs.push(callId)
  return legs
}

// Documents by capture time then arrival, without what the call says
// already (the Call-ID, unless `leg`); a message's raw text as text, or as
// its bytes (`bytes`).
async function inOrder (collection, filter, bytes, leg) {
  const docs = await collection.find(filter, { sort: { at: 1, atMicros: 1, _id: 1 }, limit: MAX_SHOWN }).toArray()
  const raw = bytes ? (value) => Buffer.from(value.buffer || value) : rawText
  return docs.map(({ _id, callId, receivedAt, ...doc }) => ({
    ...doc,
    ...(doc.raw === undefined ? {} : { raw: raw(doc.raw), rawBytes: Buffer.from(doc.raw.buffer || doc.raw).length }),
    ...(leg ? { leg: callId } : {})
  }))
}

/** The ladder as a table: `+TIME  FROM -> TO  FIRST LINE`; then the agents' logs and reports of the call. */
function printLadder ({ callId, legs = [callId], stored, messages, logs = [] }, out) {
  printMessages({ callId, legs, stored, messages }, out)
  if (logs.length === 0) return
  const of = legs.length > 1 ? `its conversation, ${legs.length} legs` : printable(callId)
  out.write(`\nWhat agents logged or reported of ${of} (${logs.length}):\n`)
  out.write(formatTable([
    ...(legs.length > 1 ? [{ key: 'leg', title: 'LEG' }] : []),
    { key: 'time', title: 'TIME (UTC)', align: 'left' },
    { key: 'kind', title: 'KIND', align: 'left' },
    { key: 'node', title: 'AGENT', align: 'left' },
    { key: 'text', title: 'TEXT', align: 'left' }
  ], logs.map((l) => ({ leg: l.leg === undefined ? null : legs.indexOf(l.leg) + 1, time: new Date(l.at).toISOString().slice(11, 23), kind: l.kind, node: l.node || l.src, text: shortened(l.text, LOG_SHOWN) }))))
}

/** What follows a message stored cut, in the views and the text export: how much of it is stored. */
function cutNote (m) {
  return m.truncated ? `\n[cut: ${m.rawBytes} of its ${m.bytes} bytes stored]` : ''
}

function printMessages ({ callId, legs = [callId], stored, messages }, out) {
  const what = legs.length > 1 ? `its conversation, ${legs.length} legs (LEG: ${legs.map((leg, i) => `${i + 1} ${printable(leg)}`).join(', ')})` : printable(callId)
  out.write(`\nSIP messages of ${what} (${stored} stored${stored > messages.length ? `, the first ${messages.length} shown` : ''}):\n`)
  if (messages.length === 0) return
  const t0 = new Date(messages[0].at).getTime()
  const rows = messages.map((m) => ({
    time: `+${((new Date(m.at).getTime() - t0) / 1000).toFixed(3)}s`,
    from: m.src,
    arrow: '->',
    to: m.dst,
    line: shortened(m.firstLine, LINE_SHOWN), // formatTable escapes every cell
    leg: m.leg === undefined ? null : legs.indexOf(m.leg) + 1
  }))
  out.write(formatTable([
    ...(legs.length > 1 ? [{ key: 'leg', title: 'LEG' }] : []),
    { key: 'time', title: 'TIME' },
    { key: 'from', title: 'FROM', align: 'left' },
    { key: 'arrow', title: '', align: 'left' },
    { key: 'to', title: 'TO', align: 'left' },
    { key: 'line', title: 'MESSAGE', align: 'left' }
  ], rows))
}

module.exports = { ladderOf, legsOf, printLadder, shortened, cutNote, SIP_MESSAGES, CALL_LOGS, MAX_SHOWN }
