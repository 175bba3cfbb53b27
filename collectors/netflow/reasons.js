'use strict'

// Why a NetFlow/IPFIX datagram is refused: the one list of reasons (counted
// as dropped.<reason>), each with one pre-made DecodeError, returned rather
// than thrown, since refusing is ordinary on a port anyone can send to.

const DecodeError = require('../../exceptions/decode-error')

const NETFLOW_REASONS = Object.freeze([
  'netflow-bad-version', // not 5, 9 or 10 (IPFIX)
  'netflow-truncated', // a header, set, template or record runs past the datagram
  'netflow-bad-length', // a length field disagrees with the bytes (IPFIX message length, a set shorter than its header, v5 bytes past its records)
  'netflow-bad-count', // a v5 count of 0 or over 30
  'netflow-bad-template', // a template or options template the RFCs do not allow (ID under 256, no fields, over MAX_TEMPLATE_FIELDS, no scope, empty records)
  'netflow-counter-too-large', // a counter or time of 2^53 or more (not stored rounded), or a time past what a Date holds (±8.64e15 ms)
  'netflow-too-many-records', // more flow and options records than the caller's maxRecords: decoding stops there
  'netflow-unknown-template' // given by the caller, never by decodeNetflow: a data set whose template is unknown (unknownTemplates > 0)
])

// A datagram refused for data of a template not known yet keeps the templates
// it brought: an exporter whose templates each ride with data of the other
// (IPv4 and IPv6, data and options, on timers of their own) would otherwise
// never have one kept, and every datagram would be refused.
const KEEPS_STATE = new Set(['netflow-unknown-template'])
const REFUSALS = Object.freeze(Object.fromEntries(NETFLOW_REASONS.map((reason) =>
  [reason, new DecodeError(reason, `invalid NetFlow/IPFIX datagram (${reason})`, { keepState: KEEPS_STATE.has(reason) })])))

/**
 * The pre-made refusal of a reason in NETFLOW_REASONS.
 * @param {string} reason
 * @returns {import('../../exceptions/decode-error')}
 */
function netflowRefusal (reason) {
  const refusal = REFUSALS[reason]
  if (!refusal) throw new TypeError(`not a NetFlow reason: ${reason}`)
  return refusal
}

module.exports = { NETFLOW_REASONS, netflowRefusal }
