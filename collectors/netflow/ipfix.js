'use strict'

// IPFIX (RFC 7011): a 16-byte message header (version 10, message length,
// export time in seconds, sequence, observation domain ID) and sets. The
// sequence counts data records (options records included) sent before this
// message in the domain (§3.1), so the next one is this one plus the data
// records read here; when a data set's template is unknown its records
// cannot be counted and the next sequence is unknown.

const { netflowRefusal } = require('./reasons')
const { newDatagram } = require('./shapes')
const { stageTemplates } = require('./template-store')
const { readSets } = require('./sets')

const HEADER_SIZE = 16

/**
 * @param {Buffer} buf one datagram whose first two bytes read 10
 * @param {object} templates the exporter's template store (template-store.js)
 * @returns {import('./shapes').NetflowDatagram|import('../../exceptions/decode-error')}
 */
function decodeIpfix (buf, templates, maxRecords = Infinity) {
  if (buf.length < HEADER_SIZE) return netflowRefusal('netflow-truncated')
  const length = buf.readUInt16BE(2)
  if (length > buf.length) return netflowRefusal('netflow-truncated')
  if (length !== buf.length) return netflowRefusal('netflow-bad-length')
  const exportTime = buf.readUInt32BE(4) * 1000
  const sequence = buf.readUInt32BE(8)
  const domain = buf.readUInt32BE(12)
  const datagram = newDatagram(10, domain, sequence, exportTime)
  const staged = stageTemplates(templates, 10, domain)
  const read = readSets(buf, HEADER_SIZE, length, { ipfix: true, staged, datagram, exportTime, maxRecords })
  if (typeof read === 'string') return netflowRefusal(read)
  if (read.unknownSets === 0) datagram.nextSequence = (sequence + read.dataRecords) >>> 0
  const { learned, withdrawn } = staged.commit()
  datagram.templatesLearned = learned
  datagram.templatesWithdrawn = withdrawn
  return datagram
}

module.exports = { decodeIpfix }
