'use strict'

// NetFlow v9 (RFC 3954): a 20-byte header (version, count, sysUptime ms,
// unix secs, sequence, source ID) and flowsets. The sequence counts export
// packets per source ID (§5.1), so the next one is this one plus one. The
// header's count (records of every kind) is not checked: exporters differ
// on it, and the flowset lengths already bound what is read.

const { netflowRefusal } = require('./reasons')
const { newDatagram } = require('./shapes')
const { stageTemplates } = require('./template-store')
const { readSets } = require('./sets')

const HEADER_SIZE = 20

/**
 * @param {Buffer} buf one datagram whose first two bytes read 9
 * @param {object} templates the exporter's template store (template-store.js)
 * @returns {import('./shapes').NetflowDatagram|import('../../exceptions/decode-error')}
 */
function decodeV9 (buf, templates, maxRecords = Infinity) {
  if (buf.length < HEADER_SIZE) return netflowRefusal('netflow-truncated')
  const sysUptime = buf.readUInt32BE(4)
  const exportTime = buf.readUInt32BE(8) * 1000
  const sequence = buf.readUInt32BE(12)
  const domain = buf.readUInt32BE(16)
  const datagram = newDatagram(9, domain, sequence, exportTime)
  datagram.nextSequence = (sequence + 1) >>> 0
  datagram.sysUptime = sysUptime
  const staged = stageTemplates(templates, 9, domain)
  const read = readSets(buf, HEADER_SIZE, buf.length, { ipfix: false, staged, datagram, exportTime, sysUptime, maxRecords })
  if (typeof read === 'string') return netflowRefusal(read)
  const { learned, withdrawn } = staged.commit()
  datagram.templatesLearned = learned
  datagram.templatesWithdrawn = withdrawn
  return datagram
}

module.exports = { decodeV9 }
