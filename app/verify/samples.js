'use strict'

// The sample messages `collector verify` sends, from the files given, in
// order: a pcap file's UDP payloads (app/verify/pcap.js), or a text file's
// non-empty lines, one message each (syslog, StatsD). Nothing else is read:
// the author's own protocol in a pcap, or one message a line.

const fs = require('node:fs')
const path = require('node:path')
const CollectorError = require('../../exceptions/collector-error')
const { splitLines } = require('../../lib/master/split')
const { readPcap, looksLikePcap } = require('./pcap')

/**
 * @param {string[]} files
 * @param {{ udpPort?: number }} [options] udpPort: take only a pcap's datagrams to this port
 * @returns {{ messages: Buffer[], files: Array<{ file: string, format: string, messages: number, skipped?: object }> }}
 */
function readSamples (files, { udpPort } = {}) {
  const messages = []
  const read = []
  for (const file of files) {
    let buf
    try {
      buf = fs.readFileSync(file)
    } catch (err) {
      throw new CollectorError(`cannot read the sample ${file}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`, 'ERR_USAGE')
    }
    const name = path.basename(file)
    const taken = looksLikePcap(buf) ? pcapMessages(buf, name, udpPort) : { format: 'lines', messages: textLines(buf) }
    messages.push(...taken.messages)
    read.push({ file, format: taken.format, messages: taken.messages.length, ...(taken.skipped ? { skipped: taken.skipped } : {}) })
  }
  if (messages.length === 0) throw new CollectorError(`no sample message in ${files.join(', ')}`, 'ERR_USAGE')
  return { messages, files: read }
}

function pcapMessages (buf, name, udpPort) {
  const { datagrams, skipped } = readPcap(buf, name)
  const taken = udpPort === undefined ? datagrams : datagrams.filter((d) => d.dstPort === udpPort)
  if (taken.length < datagrams.length) skipped.otherPort = datagrams.length - taken.length
  return { format: 'pcap', messages: taken.map((d) => d.data), skipped }
}

// One message a line, as `split: 'lines'` makes them (lib/master/split.js).
function textLines (buf) {
  return splitLines({ data: buf, remote: null }).map((part) => Buffer.from(part.data))
}

module.exports = { readSamples }
