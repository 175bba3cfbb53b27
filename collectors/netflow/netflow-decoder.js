'use strict'

// The one entry point of the NetFlow v5, v9 and IPFIX codec, the one owner
// of those formats here. Pure: it reads the datagram and the caller's
// template store, and writes to the store only what an accepted datagram
// teaches (templates, withdrawals, an IPFIX system init time). Refusals are
// returned, never thrown: the pre-made DecodeError of a NETFLOW_REASONS
// reason.

const { decodeV5 } = require('./v5')
const { decodeV9 } = require('./v9')
const { decodeIpfix } = require('./ipfix')
const { NETFLOW_REASONS, netflowRefusal } = require('./reasons')
const { createMemoryTemplateStore } = require('./template-store')
const { MAX_TEMPLATE_FIELDS } = require('./template-set')

/**
 * Decodes one NetFlow v5, v9 or IPFIX datagram.
 *
 * @param {Buffer} buf the datagram
 * @param {object} [options]
 * @param {{ get: Function, set: Function, delete: Function, keys: Function }} [options.templates]
 *   the exporter's template store (required for v9 and IPFIX): one per
 *   transport session (the collector's: exporter address and port), keys `${version}|${domain}|${templateId}`, values plain
 *   JSON; createMemoryTemplateStore() is one
 * @param {number} [options.maxRecords] more flow and options records than
 *   this refuse the datagram (netflow-too-many-records) as soon as they are
 *   read: what one datagram may cost (v5 holds at most 30)
 * @param {string} [options.exporter] the exporter's address: the caller's scope
 *   for `templates`; the codec does not read it
 * @param {number} [options.now] receive time: the codec does not read it, the
 *   flows' times come from the datagram
 * @returns {import('./shapes').NetflowDatagram|import('../../exceptions/decode-error')}
 *   (what the store throws, e.g. a DecodeError when it is full, is thrown on:
 *   the message is refused by the store's reason)
 */
function decodeNetflow (buf, { templates, maxRecords = Infinity } = {}) {
  if (!Buffer.isBuffer(buf)) throw new TypeError(`decodeNetflow takes a Buffer, got ${typeof buf}`)
  if (buf.length < 2) return netflowRefusal('netflow-truncated')
  const version = buf.readUInt16BE(0)
  if (version === 5) return decodeV5(buf)
  if (version !== 9 && version !== 10) return netflowRefusal('netflow-bad-version')
  if (typeof templates?.get !== 'function' || typeof templates.set !== 'function' || typeof templates.delete !== 'function' || typeof templates.keys !== 'function') {
    throw new TypeError('decodeNetflow needs a template store for NetFlow v9 and IPFIX: { get, set, delete, keys }')
  }
  return version === 9 ? decodeV9(buf, templates, maxRecords) : decodeIpfix(buf, templates, maxRecords)
}

/**
 * How far a domain's sequence number is from the one expected (the
 * previous datagram's nextSequence), modulo 2^32: > 0 that many flows (v5),
 * export packets (v9) or data records (IPFIX) were lost on the way or by
 * the exporter; < 0 a datagram came late, twice, or the exporter restarted.
 * @param {number} expected
 * @param {number} sequence
 * @returns {number} in [-2^31, 2^31)
 */
function sequenceGap (expected, sequence) {
  return (sequence - expected) | 0
}

module.exports = { decodeNetflow, sequenceGap, createMemoryTemplateStore, netflowRefusal, NETFLOW_REASONS, MAX_TEMPLATE_FIELDS }
