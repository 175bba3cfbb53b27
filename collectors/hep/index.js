'use strict'

const { defineCollector } = require('../../lib/collector/define-collector')
const sinks = require('../../lib/collector/sinks')
const rtcp = require('../rtcp')
const { callAnalytics } = require('../rtcp/quality-analytics')
const { callKeyOf } = require('./call-key')
const { callPartsOf } = require('./call-parts')
const { authKeyFileProblem } = require('./auth-key')
const { hepRecordOf } = require('./hep-records')
const { toStreamUpdates, ssrcsNamed } = require('../rtcp/to-stream-updates')
const { callQualityOf } = require('../rtcp/rtcp-records')
const { SIP_MESSAGES } = require('./sip-messages')
const { CALL_LOGS } = require('./call-logs')
const { CopyWindow, StoredCopies, SideCaptures, CallLedger } = require('./call-memory')
const { warmCopies } = require('./copy-warmup')

const CALLS = 'calls' // the SIP calls' collection, by default

/**
 * HEP3 (HOMER encapsulation) on 9060, UDP or TCP (each packet framed by its
 * own length, TLS through the usual flags), from capture agents and media
 * relays. Hash distribution on the call (call-key.js: the correlation id
 * of RTCP, the Call-ID of SIP), so that one call's SIP and RTCP meet in one
 * worker. RTCP (protocol type 5) becomes the RTCP collector's stream items,
 * stamped with the capture time and the inner (media) addresses, its stream
 * sides tagged with the call's `callId`, with the worker's call-quality
 * memory; SIP (type 1) becomes one document per call in `calls`, by
 * Call-ID, written with order-free operators only (calls.js), and one
 * document per message in `sip_messages` (sip-messages.js), at most
 * `hepMessagesPerCall` a call; a BYE of the call's answered dialog ends
 * its streams (a forked INVITE's other dialogs end nothing); a leg a
 * B2BUA bridged names the other (`linkedId`). Log lines (type 100) and
 * vq-rtcpxr reports (type 35) go to `call_logs` with the call they name
 * (call-logs.js). Copies of one capture are stored once and counted
 * (`duplicates`, call-memory.js). What carries no call data is refused by
 * reason (hep-records.js).
 */
module.exports = defineCollector({
  name: 'hep',
  description: 'HEP3 (HOMER encapsulation) collector: SIP calls by Call-ID, every SIP message, and their RTCP call quality from rtpengine, Kamailio, Asterisk, FreeSWITCH, heplify',
  usage: 'collector run hep [options]',
  listen: { protocol: 'udp', port: 9060, framing: 'hep', maxFrameBytes: 65535, distribution: 'hash', affinity: 'strict' },
  // The RTCP collector's settings apply to the RTCP it carries.
  settings: {
    ...rtcp.settings.worker,
    hepPasswordFile: { type: 'path', group: 'HEP', validate: authKeyFileProblem, description: 'file holding the HEP auth key (chunk 0x0e) agents must send: packets without it or with another are dropped (dropped.hep-auth); also COLLECTOR_HEP_PASSWORD; never on the command line' },
    hepCopyWindow: { type: 'duration', default: 200, range: [0, 400], group: 'HEP', description: 'a packet with the bytes and addresses of one captured this close to it (capture times) is a copy: stored once, counted in duplicates (0: none is); under SIP\'s 500 ms retransmission interval, so a retransmission is kept' },
    hepCorrelationHeaders: { type: 'list', default: ['X-CID', 'X-Call-ID', 'X-Orig-Call-ID'], group: 'HEP', description: 'headers of an initial INVITE naming the Call-ID of the leg a B2BUA bridged it to, first found kept (linkedId): legs shown as one conversation; the HEP correlation id on SIP counts when none is there' },
    hepMessagesPerCall: { type: 'integer', default: 1000, range: [1, 1000000], group: 'HEP', description: 'SIP messages stored per call (per worker memory of the call); past it the call counts them in overCap' },
    callsCollection: { flag: false, type: 'string', default: CALLS, group: 'Storage', description: 'collection of the SIP calls' },
    sipMessagesCollection: { flag: false, type: 'string', default: SIP_MESSAGES, group: 'Storage', description: 'collection of the SIP messages' },
    callLogsCollection: { flag: false, type: 'string', default: CALL_LOGS, group: 'Storage', description: 'collection of the agents\' log lines (HEP type 100) and vq-rtcpxr reports (type 35), by call' }
  },
  // A TCP segment copied whole holding several calls' SIP messages: a packet per call (call-parts.js).
  parts: callPartsOf,
  // The call of a HEP packet; for anything else (-1) its sender.
  affinity: () => ({ key: (buf, start, end) => { const key = callKeyOf(buf, start, end); return key >= 0 ? key : null } }),
  decode: (message, settings, { receivedAt }) => hepRecordOf(message.data, settings, receivedAt),
  // A new call (SIP) or reporter SSRC (RTCP) is new documents and memory: capped per minute.
  cardinality: (record) => record.call ? record.call.callId : record.log ? record.log.callId : ssrcsNamed(record.rtcp),
  tally: { types: (record) => record.type },
  state: (settings) => {
    const copies = new CopyWindow({ windowMs: settings.hepCopyWindow })
    return stateOf(settings, copies, new SideCaptures({ span: copies.span }))
  },
  // A worker's copy memory starts from what arrived in its last seconds: copies of what the worker before it stored.
  warm: (state, db, settings, context) => warmCopies(state, db, settings, context),
  // A SIP payload holding several messages gave one record each (hep-records.js): an item each.
  enrich: (records, state, message) => Array.isArray(records) ? records.map((record) => itemsOf(record, state, message)) : itemsOf(records, state, message),
  stats: ({ quality, counts }) => ({ quality: quality.stats(), duplicates: { ...counts.duplicates }, overCap: counts.overCap, otherDialogByes: counts.otherDialogByes, coalesced: counts.coalesced, clockAhead: counts.clockAhead }),
  memory: ({ quality, copies, sides, stored, ledger }) => {
    const memory = quality.memory()
    return { held: { ...memory.held, copies: copies.size, copySides: sides.size, storedCopies: stored.size, calls: ledger.size }, evicted: { ...memory.evicted, copies: copies.evicted, calls: ledger.evicted } }
  },
  sinks: [
    sinks.streams({ analytics: callAnalytics, of: (item) => item.call ? item.ends : item.log ? null : item }),
    sinks.updates({
      collection: CALLS,
      key: 'callId',
      fromSettings: { collection: 'callsCollection' },
      indexes: [{ key: { callId: 1 }, unique: true }, { key: { invitedAt: 1 } }, { key: { lastSeen: 1 } }, { key: { 'caller.user': 1, invitedAt: 1 } }, { key: { 'callee.user': 1, invitedAt: 1 } }, { key: { linkedId: 1 } }],
      // Retention by the arrival of the call's last SIP message (capture
      // times, firstSeen/lastSeen, are the agent's clock: a replayed capture's are old).
      expireBy: 'lastReceivedAt',
      of: (item, { receivedAt }) => item.call ? callUpdate(item, receivedAt) : null
    }),
    callDocuments(SIP_MESSAGES, 'sipMessagesCollection', 'message'),
    callDocuments(CALL_LOGS, 'callLogsCollection', 'log')
  ]
})

function itemsOf (record, state, message) {
  if (record.coalesced) state.counts.coalesced++
  if (record.clockAhead) state.counts.clockAhead++
  return record.call ? sipItemsOf(record, state, message) : record.log ? logItemsOf(record, state, message) : rtcpItemsOf(record, state, message)
}

// A document per SIP message or agent's log line (`field` of an item), kept
// with its call: read by Call-ID in capture order, expired by arrival.
function callDocuments (collection, setting, field) {
  return sinks.documents({
    collection,
    fromSettings: { collection: setting },
    indexes: [{ key: { callId: 1, at: 1 } }],
    expireBy: 'receivedAt',
    of: (item, { receivedAt }) => item[field] ? { ...item[field], receivedAt } : null
  })
}

// The calls sink's update of a SIP item: a copy, a message past the cap
// and a BYE past the call's dialogs count in the call (once per message:
// `inc` is watermarked). A copy writes its call's fields as its original
// does (the same bytes, each field order-free).
function callUpdate ({ call, duplicate, overCap, byePastCap }, receivedAt) {
  const max = { ...call.max }
  max.lastReceivedAt = receivedAt
  const update = { callId: call.callId, min: call.min, max, set: call.set }
  if (!duplicate && !overCap && !byePastCap) return update
  update.inc = {}
  if (duplicate) update.inc.duplicates = 1
  if (overCap) update.inc.overCap = 1
  if (byePastCap) update.inc.byesPastCap = 1
  return update
}

// A SIP record's item, always one (so that the documents sink keys its
// message document by the message's key, whatever else comes with it): a
// copy only counts; a message past the call's cap updates the call without
// its document. Its SDP's media is told to the worker's call-quality memory
// first: the clock and codec of the call's RTCP that follows.
function sipItemsOf (record, { copies, stored, ledger, messagesPerCall, counts, quality }, message) {
  const callId = record.call.callId
  if (isCopy(record, copies, stored, message)) {
    counts.duplicates.sip++
    // Its call's fields too (the same, order-free): the copy taken first may be one whose own update a dead worker never wrote.
    return { call: record.call.bye && !ledger.admitBye(callId, record.call.dialog) ? withoutBye(record.call) : record.call, duplicate: true }
  }
  if (record.sdp) quality.clocks.announce(record.sdp.callId, record.sdp.media, record.sdp.role, record.sdp.at)
  const admitted = ledger.admitMessage(callId, messagesPerCall)
  if (!admitted) counts.overCap++
  const { call, ends, byePastCap } = dialogEffects(record, ledger, counts)
  const item = admitted ? { ...record, call, ends } : { call, overCap: true, ends }
  if (byePastCap) item.byePastCap = true
  return item
}

// What a SIP message does to its call's dialogs in this worker: a 2xx to
// an INVITE may be its first answer; a BYE ends the call's streams (`ends`:
// the SSRCs its RTCP named in this worker, which the streams sink takes)
// only when it belongs to the dialog answered first as far as this worker
// has seen (a forked INVITE's second answer, dropped by the caller with a
// BYE at once, ends nothing: counted in otherDialogByes), and goes to the
// call's `byes` while the call has room for its dialog (else counted,
// `byePastCap`).
function dialogEffects ({ call, at }, ledger, counts) {
  if (call.min.firstAnswer) ledger.noteAnswer(call.callId, call.min.firstAnswer)
  if (!call.bye) return { call, ends: null }
  let ends = []
  if (ledger.byeEndsCall(call.callId, call.dialog)) ends = ledger.ssrcsOf(call.callId).map((ssrc) => ({ endID: ssrc, callId: call.callId, timestamp: new Date(at) }))
  else counts.otherDialogByes++
  if (ledger.admitBye(call.callId, call.dialog)) return { call, ends }
  return { call: withoutBye(call), ends, byePastCap: true }
}

// A BYE's call update without its dialog's entry in `byes` (past the call's bound).
function withoutBye (call) {
  const { [call.bye]: _, ...min } = call.min
  return { ...call, min }
}

// An agent's own log line (type 100) is no capture: two alike within the
// copy window are two events (a retry logged twice 50 ms apart), copies
// only at the same capture time to the millisecond (one packet sent twice;
// an agent that sends no time has its arrival instead, never equal); a
// captured vq-rtcpxr report is copied as SIP is.
function logItemsOf (record, { copies, ledger, messagesPerCall, counts }, message) {
  const copy = record.log.kind === 'log' ? `${record.copy} ${record.at}` : record.copy
  if (copies.isCopy(copy, record.at, arrivalOf(message))) {
    counts.duplicates.log++
    return []
  }
  if (!ledger.admitMessage(record.log.callId, messagesPerCall)) {
    counts.overCap++
    return []
  }
  return record
}

// Whether a SIP or RTCP record copies one this worker took (the copy
// window, which remembers it if not), or one the worker before it stored
// (read back as it started, StoredCopies); not when it is that stored
// message itself delivered again (its worker died before acknowledging
// it), even after a copy of it came: its writes, guarded, land once, and
// whatever of them had not landed lands now.
function isCopy (record, copies, stored, message) {
  const messageKey = () => message.key().toString('hex')
  const arrived = arrivalOf(message)
  const copied = copies.isCopy(record.copy, record.at, arrived) || stored.isCopy(record.copy, record.at, copies.windowMs, messageKey, arrived)
  return copied && !stored.holds(record.copy, messageKey, arrived)
}

// A worker's memory between messages (call-memory.js).
function stateOf (settings, copies, sides) {
  return {
    quality: callQualityOf(settings),
    copies,
    sides,
    stored: new StoredCopies(),
    ledger: new CallLedger(),
    messagesPerCall: settings.hepMessagesPerCall,
    counts: { duplicates: { sip: 0, rtcp: 0, log: 0 }, overCap: 0, otherDialogByes: 0, coalesced: 0, clockAhead: 0 }
  }
}

// The clock the copy memories keep time by: when the message reached the
// master (its arrival, which a copy's is within milliseconds of), not when
// this worker got to it: a worker that stalled between a packet and its
// copy (its first write, a backlog, a redelivery) still knows the copy.
function arrivalOf (message) {
  const at = message && message.receivedAt ? +message.receivedAt : NaN
  return Number.isFinite(at) ? at : Date.now()
}

// An RTCP record's stream items (none for a copy), the call's SSRCs
// remembered (a copy's too: the worker after one that died learns them
// from whichever comes). Each report block's item carries what a copy of
// the report shares, with that of the side's other reports of the last
// moment (`recentCaptures`, written on its side of the stream with the
// report's counts, in one update): a worker that starts reads them back
// (copy-warmup.js), so that a copy of a report the worker before it stored
// counts once here too.
function rtcpItemsOf (record, { copies, sides, stored, ledger, quality, counts }, message) {
  if (record.callId) for (const packet of record.rtcp.packets) if (packet.ssrc !== undefined) ledger.addSsrc(record.callId, String(packet.ssrc))
  if (isCopy(record, copies, stored, message)) {
    counts.duplicates.rtcp++
    return []
  }
  const items = streamItemsOf(record, quality)
  if (copies.windowMs > 0) {
    let capture = null
    for (const item of items) {
      if (item.fromID === undefined) continue
      capture = capture || { key: record.copy, at: new Date(record.at), message: message.key().toString('hex') }
      item.fields.recentCaptures = sides.add(`${item.fromID}>${item.toID}`, capture, arrivalOf(message))
    }
  }
  return items
}

// An RTCP record's stream items, its sides tagged with the call's Call-ID,
// its SSRCs bound to the media stream the call's SDP names for its addresses.
function streamItemsOf ({ rtcp: decoded, at, arrivedAt, srcIp, srcPort, dstIp, dstPort, callId }, quality) {
  if (callId) quality.clocks.bindCall(callId, { ip: srcIp, port: srcPort }, { ip: dstIp, port: dstPort }, ssrcsOf(decoded), at)
  const items = toStreamUpdates(decoded, { address: srcIp }, at, quality, arrivedAt)
  if (callId) for (const item of items) if (item.fields) item.fields.callId = callId
  return items
}

// Every SSRC an RTCP datagram names: its senders and the sources they report on.
function ssrcsOf (decoded) {
  const ssrcs = new Set()
  for (const packet of decoded.packets) {
    if (packet.ssrc !== undefined) ssrcs.add(packet.ssrc)
    if (packet.reports) for (const block of packet.reports) ssrcs.add(block.ssrc)
  }
  return ssrcs
}
