'use strict'

const { defineCollector } = require('../../lib/collector/define-collector')
const sinks = require('../../lib/collector/sinks')
const rtcp = require('../rtcp')
const { callAnalytics } = require('../rtcp/quality-analytics')
const { callKeyOf } = require('./call-key')
const { authKeyFileProblem } = require('./auth-key')
const { hepRecordOf } = require('./hep-records')
const { toStreamUpdates } = require('../rtcp/to-stream-updates')
const { callQualityOf } = require('../rtcp/rtcp-records')

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
 * Call-ID, written with order-free operators only (calls.js). What
 * carries no call data is refused by reason (hep-records.js).
 */
module.exports = defineCollector({
  name: 'hep',
  description: 'HEP3 (HOMER encapsulation) collector: SIP calls by Call-ID and their RTCP call quality from rtpengine, Kamailio, Asterisk, FreeSWITCH, heplify',
  usage: 'collector run hep [options]',
  listen: { protocol: 'udp', port: 9060, framing: 'hep', maxFrameBytes: 65535, distribution: 'hash' },
  // The RTCP collector's settings apply to the RTCP it carries.
  settings: {
    ...rtcp.settings.worker,
    hepPasswordFile: { type: 'path', group: 'HEP', validate: authKeyFileProblem, description: 'file holding the HEP auth key (chunk 0x0e) agents must send: packets without it or with another are dropped (dropped.hep-auth); also COLLECTOR_HEP_PASSWORD; never on the command line' },
    callsCollection: { flag: false, type: 'string', default: CALLS, group: 'Storage', description: 'collection of the SIP calls' }
  },
  // The call of a HEP packet; for anything else (-1) its sender.
  affinity: () => ({ key: (buf, start, end) => { const key = callKeyOf(buf, start, end); return key >= 0 ? key : null } }),
  decode: (message, settings, { receivedAt }) => hepRecordOf(message.data, settings, receivedAt),
  // A new call (SIP) or reporter SSRC (RTCP) is new documents and memory: capped per minute.
  cardinality: (record) => record.call ? record.call.callId : record.rtcp.packets[0].ssrc,
  tally: { types: (record) => record.type },
  state: (settings) => ({ quality: callQualityOf(settings) }),
  enrich: (record, { quality }) => record.call ? announced(record, quality) : streamItemsOf(record, quality),
  stats: ({ quality }) => ({ quality: quality.stats() }),
  memory: ({ quality }) => quality.memory(),
  sinks: [
    sinks.streams({ analytics: callAnalytics, of: (item) => item.call ? null : item }),
    sinks.updates({
      collection: CALLS,
      key: 'callId',
      fromSettings: { collection: 'callsCollection' },
      indexes: [{ key: { callId: 1 }, unique: true }, { key: { invitedAt: 1 } }, { key: { 'caller.user': 1, invitedAt: 1 } }, { key: { 'callee.user': 1, invitedAt: 1 } }],
      // Retention by the arrival of the call's last SIP message (capture
      // times, firstSeen/lastSeen, are the agent's clock: a replayed capture's are old).
      expireBy: 'lastReceivedAt',
      of: (item, { receivedAt }) => item.call ? { callId: item.call.callId, min: item.call.min, max: { ...item.call.max, lastReceivedAt: receivedAt }, set: item.call.set } : null
    })
  ]
})

// A SIP record, its SDP's media told to the worker's call-quality memory
// first: the clock and codec of the call's RTCP that follows.
function announced (record, quality) {
  if (record.sdp) quality.clocks.announce(record.sdp.callId, record.sdp.media, record.sdp.offer, record.sdp.at)
  return record
}

// An RTCP record's stream items, its sides tagged with the call's Call-ID,
// its SSRCs bound to the media stream the call's SDP names for its addresses.
function streamItemsOf ({ rtcp: decoded, at, srcIp, srcPort, dstIp, dstPort, callId }, quality) {
  if (callId) quality.clocks.bindCall(callId, { ip: srcIp, port: srcPort }, { ip: dstIp, port: dstPort }, ssrcsOf(decoded), at)
  const items = toStreamUpdates(decoded, { address: srcIp }, at, quality)
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
